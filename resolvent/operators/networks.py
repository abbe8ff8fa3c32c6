"""Operator networks ``G[r](x)``: the reward enters only through an encoding ``e`` of it.

Policy evaluation: attention, linear, vanilla, successor features; control: max-out.

For the operator networks e = r(xi_1..xi_m), its values at m reference points; for the
successor-features baseline e = w, the reward's weights on the basis (see ``algorithms/sf.py``).
Every network maps x (b, dx), reference points xi (m, dx) and encodings e (R, m or d) to
G (b, R): one column per reward.
"""
from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MLP(nn.Module):
    """ReLU multi-layer perceptron ``dx -> hidden... -> out``."""

    hidden: Sequence[int]
    out: int

    @nn.compact
    def __call__(self, x):
        for h in self.hidden:
            x = nn.relu(nn.Dense(h)(x))
        return nn.Dense(self.out)(x)


class AttentionOperator(nn.Module):
    """Attention operator (paper Eq. "attention design"):

        G[r](x) = 1/(1-gamma) sum_j softmax_j(f(xi_j)^T g(x) / sqrt(F)) r(xi_j)

    Linear and monotone in r, and G[c] = c/(1-gamma), exactly, by construction. The
    1/sqrt(F) is the usual scaled dot product (a fixed reparametrisation of f): without it
    the untrained softmax is nearly one-hot and training stalls far from the truth.

    ``absorbing``: one more slot, the absorbing state after a termination, where every reward
    is 0 (its key f_0 is learned). The discounted occupancy of an episode that terminates has
    mass E[1 - gamma^T] / (1-gamma) < 1/(1-gamma); the rest sits there. Then
    G[c] = c (1 - w_0(x)) / (1-gamma), still linear and monotone in r. Off for the paper's
    families (its design); on for datasets of one's own whose episodes terminate.
    """

    gamma: float = 0.99
    hidden: Sequence[int] = (256, 256)
    features: int = 64
    absorbing: bool = False

    @nn.compact
    def __call__(self, x, xi, r_xi):
        fx = MLP(self.hidden, self.features, name="f")(xi)           # (m, F)
        gx = MLP(self.hidden, self.features, name="g")(x)            # (b, F)
        logits = gx @ fx.T / jnp.sqrt(self.features)                 # (b, m)
        if not self.absorbing:
            w = jax.nn.softmax(logits, axis=-1)                      # (b, m)
            return w @ r_xi.T / (1.0 - self.gamma)                   # (b, R)
        f0 = self.param("absorbing_key", nn.initializers.zeros, (self.features,))
        w = jax.nn.softmax(jnp.concatenate([gx @ f0[:, None] / jnp.sqrt(self.features), logits], -1),
                           axis=-1)                                  # (b, 1 + m)
        return w[:, 1:] @ r_xi.T / (1.0 - self.gamma)                # (b, R): the slot's reward is 0


class LinearOperator(nn.Module):
    """Linear-decomposition operator (paper Eq. "linear design", appendix O(b+m) form):

        G[r](x) = 1/(1-gamma) g(x)^T (1/m sum_j r(xi_j) f(xi_j))

    The 1/m is a fixed scale, so an untrained network starts near 0; the reward's summary
    ``sum_j r(xi_j) f(xi_j)`` is computed once, O(m), and reused for the batch, O(b).
    """

    gamma: float = 0.99
    hidden: Sequence[int] = (256, 256)
    features: int = 64

    @nn.compact
    def __call__(self, x, xi, r_xi):
        fx = MLP(self.hidden, self.features, name="f")(xi)           # (m, F)
        gx = MLP(self.hidden, self.features, name="g")(x)            # (b, F)
        summary = r_xi @ fx / fx.shape[0]                            # (R, F)
        return gx @ summary.T / (1.0 - self.gamma)                   # (b, R)


class VanillaOperator(nn.Module):
    """Vanilla DeepONet (Lu et al. 2019; paper Eq. "general purpose design"):

        G[r](x) = phi(r(xi_1..xi_m))^T psi(x) + b

    a branch net phi over the reward's values and a trunk net psi over x. With
    ``paired=True`` row i of x goes with reward i only (r_xi (b, m)) and the output is (b,).
    """

    hidden: Sequence[int] = (256, 256)
    features: int = 64

    @nn.compact
    def __call__(self, x, xi, r_xi, paired: bool = False):
        branch = MLP(self.hidden, self.features, name="branch")(r_xi)   # (R, F) or (b, F)
        trunk = MLP(self.hidden, self.features, name="trunk")(x)        # (b, F)
        bias = self.param("bias", nn.initializers.zeros, ())
        if paired:
            return jnp.sum(trunk * branch, axis=-1) + bias               # (b,)
        return trunk @ branch.T + bias                                   # (b, R)


class MaxOutOperator(nn.Module):
    """Max-out of K attention operators for control (paper Eq. "max-out design"):

        G[r](x) = 1/(1-gamma) max_k sum_j softmax_j(f_k(xi_j)^T g_k(x) / sqrt(F)) r(xi_j)

    Every copy weighs the same m reference points, so G is sub-linear, positively
    homogeneous, monotone and G[a r + c] = a G[r] + c/(1-gamma) for a >= 0, exactly (paper
    Proposition 2). The K copies share the hidden layers of f and of g and differ in their
    last layer (K F outputs), so a forward pass costs about one attention operator's; the
    attention weights (b, K, m) are computed once and applied to every reward, since each copy
    is linear in r. With ``paired=True`` row i of x goes with reward i only: r_xi (b, m) -> (b,).
    """

    gamma: float = 0.99
    hidden: Sequence[int] = (256, 256)
    features: int = 64
    heads: int = 8               # K (the paper's): the default of every config that sets it

    def setup(self):
        self.f = MLP(self.hidden, self.heads * self.features)
        self.g = MLP(self.hidden, self.heads * self.features)

    def weights(self, x, xi):
        """The K copies' attention weights over the reference points: (b, K, m)."""
        k, f = self.heads, self.features
        fx = self.f(xi).reshape(xi.shape[0], k, f)                               # (m, K, F)
        gx = self.g(x).reshape(x.shape[0], k, f)                                 # (b, K, F)
        logits = jnp.einsum("bkf,mkf->bkm", gx, fx) / jnp.sqrt(f)                # (b, K, m)
        return jax.nn.softmax(logits, axis=-1)

    def __call__(self, x, xi, r_xi, paired: bool = False):
        w = self.weights(x, xi)                                                  # (b, K, m)
        if paired:
            g = jnp.einsum("bkm,bm->bk", w, r_xi)                                # (b, K)
        else:
            g = jnp.einsum("bkm,rm->bkr", w, r_xi)                               # (b, K, R)
        return jnp.max(g, axis=1) / (1.0 - self.gamma)                           # (b,) or (b, R)


class SuccessorFeatures(nn.Module):
    """Successor features psi(x) (d outputs) for a basis phi (Barreto et al. 2017):

        q_w(x) = w^T psi(x),   psi(x) = phi(x) + gamma P_pi psi(x)

    Here the "encoding" of a reward is its weight vector w (R, d); xi is unused.
    """

    n_basis: int = 32
    hidden: Sequence[int] = (256, 256)

    @nn.compact
    def __call__(self, x, xi, w):
        psi = MLP(self.hidden, self.n_basis, name="psi")(x)          # (b, d)
        return psi @ w.T                                             # (b, R)


class QNetwork(nn.Module):
    """A plain Q network for ONE reward, the per-reward FQE oracle:

        q(x) = MLP(x) + c,    c = E_data[r] / (1 - gamma)

    The reward's "encoding" (R = 1, 1) is its scale c, so the output starts at the level of
    the reward's Q-values instead of 0 and can converge within the operators' budget.
    """

    hidden: Sequence[int] = (256, 256)

    @nn.compact
    def __call__(self, x, xi, scale):
        return MLP(self.hidden, 1, name="q")(x) + scale[:, 0]       # (b, 1)


NETWORKS = {"attention": AttentionOperator, "linear": LinearOperator,
            "vanilla": VanillaOperator, "sf": SuccessorFeatures, "maxout": MaxOutOperator,
            "fqe": QNetwork}


def make_network(method: str, gamma: float, hidden: Sequence[int], features: int, n_basis: int,
                 heads: int = MaxOutOperator.heads, absorbing: bool = False):
    """The network of ``method`` with the experiment's sizes (``heads``: max-out's K;
    ``absorbing``: the attention operator's absorbing-state slot)."""
    if method not in NETWORKS:
        raise ValueError(f"unknown method {method!r}; known: {sorted(NETWORKS)}")
    hidden = tuple(hidden)
    if method == "maxout":
        if heads < 1:
            raise ValueError(f"heads (max-out's K) must be >= 1, got {heads}")
        return MaxOutOperator(gamma=gamma, hidden=hidden, features=features, heads=heads)
    if method == "attention":
        return AttentionOperator(gamma=gamma, hidden=hidden, features=features, absorbing=absorbing)
    if method == "linear":
        return LinearOperator(gamma=gamma, hidden=hidden, features=features)
    if method == "vanilla":
        return VanillaOperator(hidden=hidden, features=features)
    if method == "fqe":
        return QNetwork(hidden=hidden)
    return SuccessorFeatures(n_basis=n_basis, hidden=hidden)
