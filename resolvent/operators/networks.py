"""Operator networks ``G[r](x)``: the reward enters only through an encoding ``e`` of it.

Policy evaluation: attention, linear, vanilla, successor features; control: max-out.

For the operator networks e = r(xi_1..xi_m), its values at m reference points; for the
successor-features baseline e = w, the reward's weights on the basis (see ``algorithms/sf.py``).
Every network maps x (b, dx), reference points xi (m, dx) and encodings e (R, m or d) to
G (b, R): one column per reward.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


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


class KernelOperator(nn.Module):
    """The operator scored under the target policy, over any number of reference points:

        G[r](s, a) = r(s, a, .) + gamma U[r](s, a)
        U[r](x)    = 1/(1-gamma) sum_h pi_h(x) sum_j k_h(x, xi_j) r(s_j, pi(s_j), .) / (k_h0(x) + sum_j k_h(x, xi_j))

    This module is U: the discounted occupancy of the states after the first step, as a
    mixture of H probability measures over reference states xi_j = (s_j, pi(s_j)), mixture
    weights pi_h(x) = softmax_h of g's last H outputs (``heads``): a trajectory's occupancy is a
    curve through the state space, which one kernel bump represents poorly. Kernels
    (``KERNELS``):

        favor:    k_h(x, xi) = phi(g_h(x))^T phi(f_h(xi)),  phi(u) = exp(Omega u - ||u||^2 / 2) / sqrt(M)

    positive random features (FAVOR+, Choromanski et al. 2020) of the softmax kernel
    exp(g_h^T f_h) with a fixed Gaussian Omega (M, F) and g_h, f_h on a sphere of learned radius
    (bounded estimator variance): the weights stay a probability measure and a reward's
    summary ``sum_j phi(f_h(xi_j)) r_j`` costs O(N H M) once, so N can be the whole dataset;
    or ``softmax``: k_h = exp(g_h(x)^T f_h(xi) / sqrt(F)) exactly, O(b H N).

    Linear and monotone in r, and G[c] = c/(1-gamma), exactly. ``absorbing``: a slot k_h0 (a
    learned key per head) where every reward is 0, for episodes that terminate. The
    encode/answer split (``keys``, ``summary``, ``answer``) lets an inference model cache the
    keys of its N points.
    """

    gamma: float = 0.99
    hidden: Sequence[int] = (256, 256)
    features: int = 64
    random_features: int = 256
    kernel: str = "favor"
    absorbing: bool = False
    heads: int = 4

    def setup(self):
        if self.kernel not in KERNELS:
            raise ValueError(f"unknown kernel {self.kernel!r}; known: {list(KERNELS)}")
        self.f = MLP(self.hidden, self.heads * self.features)
        self.g = MLP(self.hidden, self.heads * (self.features + 1))
        if self.kernel == "favor":
            self.omega = self.param("omega", nn.initializers.normal(1.0), (self.random_features, self.features))
            self.log_radius = self.param("log_radius", nn.initializers.constant(0.5), ())
        if self.absorbing:
            self.absorbing_key = self.param("absorbing_key", nn.initializers.normal(1.0),
                                            (self.heads, self.features))

    def _scaled(self, u):
        """Softmax kernel inputs (..., H, F): u / F^(1/4) (softmax); for favor u on a sphere of
        learned radius, so that the random features' variance stays bounded."""
        if self.kernel == "softmax":
            return u / self.features ** 0.25
        return jnp.exp(self.log_radius) * u / jnp.sqrt(jnp.sum(u ** 2, -1, keepdims=True) + 1e-6)

    def _phi(self, u):
        """Positive random features of the keys u (n, H, F): (n, H, M), up to one constant per head
        for all rows, which cancels in the normalisation."""
        omega = jax.lax.stop_gradient(self.omega)                                   # (M, F): fixed
        proj = u @ omega.T - 0.5 * jnp.sum(u ** 2, -1, keepdims=True)               # (n, H, M)
        stab = jnp.max(proj, axis=(0, 2), keepdims=True)
        return jnp.exp(proj - jax.lax.stop_gradient(stab)) / jnp.sqrt(self.random_features)

    def keys(self, xi):
        """The reference points' keys, the absorbing slot first: (m (+1), H, M) or (m (+1), H, F)."""
        fx = self.f(xi).reshape(xi.shape[0], self.heads, self.features)             # (m, H, F)
        if self.absorbing:
            fx = jnp.concatenate([self.absorbing_key[None], fx], 0)                 # (1 + m, H, F)
        fx = self._scaled(fx)
        return self._phi(fx) if self.kernel == "favor" else fx

    def summary(self, keys, r_xi):
        """A reward's summary: favor sum_j phi_hj [r_j, 1] (H, R + 1, M), the R sums and the normaliser
        last; softmax (keys, r)."""
        if self.absorbing:
            r_xi = jnp.concatenate([jnp.zeros((r_xi.shape[0], 1), r_xi.dtype), r_xi], 1)   # (R, 1 + m)
        if self.kernel == "favor":   # one pass over the N keys for the R sums and the normaliser
            n, h, m = keys.shape
            rows = jnp.concatenate([r_xi, jnp.ones((1, n), r_xi.dtype)], 0)         # (R + 1, N)
            return jnp.swapaxes((rows @ keys.reshape(n, h * m)).reshape(-1, h, m), 0, 1)   # (H, R + 1, M)
        return keys, r_xi

    def answer(self, x, summary):
        """U[r](x) (b, R) from the summaries of the rewards."""
        out = self.g(x)                                                             # (b, H (F + 1))
        mix = jax.nn.softmax(out[:, :self.heads], axis=-1)                          # (b, H)
        gx = self._scaled(out[:, self.heads:].reshape(x.shape[0], self.heads, self.features))   # (b, H, F)
        # one head at a time, as 2-D matrix products: 5x faster on CPU than the batched (b, H, .)
        # products, which transpose (b, H, M) arrays of 1e7 entries at 1e4 points
        if self.kernel == "favor":
            u = jnp.stack([self._favor_head(gx[:, h], summary[h]) for h in range(self.heads)], 1)   # (b, H, R)
        else:
            keys, r_xi = summary                                                    # (m, H, F) (R, m)
            u = jnp.stack([jax.nn.softmax(gx[:, h] @ keys[:, h].T, axis=-1) @ r_xi.T   # (b, m) (m, R)
                           for h in range(self.heads)], 1)                          # (b, H, R)
        return jnp.einsum("bh,bhr->br", mix, u) / (1.0 - self.gamma)                # (b, R)

    def _favor_head(self, q, sums):
        """One head's kernel average sum_j k(x, xi_j) r_j / sum_j k(x, xi_j): (b, F) -> (b, R), from
        its summary sums (R + 1, M), the normaliser last. phi(q) enters up to a constant per row,
        which cancels: exp(Omega q - max_M) (the -||q||^2/2 of phi is such a constant)."""
        proj = q @ jax.lax.stop_gradient(self.omega).T                              # (b, M)
        phi = jnp.exp(proj - jax.lax.stop_gradient(jnp.max(proj, -1, keepdims=True)))   # (b, M)
        nd = phi @ sums.T                                                           # (b, R + 1)
        return nd[:, :-1] / jnp.maximum(nd[:, -1:], 1e-30)

    def __call__(self, x, xi, r_xi):
        return self.answer(x, self.summary(self.keys(xi), r_xi))


KERNELS = ("favor", "softmax")


def widen_heads(params: dict, layers: int, heads: int, features: int, to: int, key: jax.Array,
                noise: float = 1e-3) -> dict:
    """A ``KernelOperator``'s parameters with ``to`` = c ``heads`` kernels, the same operator:

        pi'_{h,i}(x) = pi_h(x) / c,   k'_{h,i} = k_h        (i = 1..c, the copies of head h)

    every head copied c times (f's and g's output columns, the absorbing slot's key) and each
    copy's mixture logit lowered by log c, so that sum_i pi'_{h,i} k'_{h,i} = pi_h k_h; then the
    copies' features (not the originals') moved by ``noise`` times their weights' scale, so that
    training can part them. ``params`` may carry leading axes (the seeds); ``layers``: the MLPs'
    hidden layers (their output layer is ``Dense_layers``). A wider student for distillation
    (``distil.kernel_heads``) starts from it as its teacher."""
    if to % heads or to < heads:
        raise ValueError(f"a kernel operator widens to a multiple of its {heads} kernels, got {to}")
    c, p = to // heads, jax.tree_util.tree_map(np.asarray, params["params"])
    k_f, k_g = jax.random.split(key)
    moved = np.tile(np.arange(c) > 0, heads)                                           # (H c,) the copies

    def copies(w: np.ndarray, k: jax.Array, width: int) -> np.ndarray:   # (..., H width) head-major -> (..., H c width)
        w = np.repeat(w.reshape(*w.shape[:-1], heads, 1, width), c, axis=-2).reshape(*w.shape[:-1], to * width)
        moves = np.asarray(jax.random.normal(k, w.shape)) * noise * np.std(w)
        return np.where(np.repeat(moved, width), w + moves, w).astype(np.float32)

    last = f"Dense_{layers}"
    f = {**p["f"], last: {n: copies(p["f"][last][n], k_f, features) for n in ("kernel", "bias")}}
    g_out = {}
    for n in ("kernel", "bias"):
        w = p["g"][last][n]                                                              # (..., H (F + 1))
        logits = np.repeat(w[..., :heads], c, axis=-1) - (np.log(c) if n == "bias" else 0.0)   # (..., H c)
        g_out[n] = np.concatenate([logits, copies(w[..., heads:], k_g, features)], -1).astype(np.float32)
    out = {**p, "f": f, "g": {**p["g"], last: g_out}}
    if "absorbing_key" in p:                                                             # (..., H, F)
        a = p["absorbing_key"]
        flat = copies(a.reshape(*a.shape[:-2], heads * features), jax.random.fold_in(key, 2), features)
        out["absorbing_key"] = flat.reshape(*a.shape[:-2], to, features)                 # (..., H c, F)
    return {**params, "params": jax.tree_util.tree_map(jnp.asarray, out)}


class ForwardBackward(nn.Module):
    """Forward-backward representation of the target policy's successor measure (Touati and
    Ollivier 2021; Blier et al. 2021), for a FIXED policy:

        M^pi(x, ds+) = sum_t gamma^t P(s_{t+1} in ds+ | x, pi) ~ F(x)^T B(s+) rho(ds+)
        U[r](x) = F(x)^T z_r,   z_r = E_rho[B(s+) r(s+, pi(s+), .)] ~ 1/m sum_j B(xi_j) r_j

    with rho the distribution of the data's next states; ``G[r] = r + gamma U[r]`` scores every
    later step under pi. z is NOT projected onto a sphere (that would throw away Q's scale).
    Trained by ``algorithms.fb`` (the measure's Bellman equation, contrastive, plus B's
    orthonormality). The keys of an inference model's N points are B(xi_j), cached.
    """

    hidden: Sequence[int] = (256, 256)
    features: int = 64

    def setup(self):
        self.forward_map = MLP(self.hidden, self.features)
        self.backward_map = MLP(self.hidden, self.features)

    def keys(self, xi):
        return self.backward_map(xi)                                                # (m, d)

    def summary(self, keys, r_xi):
        return r_xi @ keys / keys.shape[0]                                          # (R, d): z_r

    def answer(self, x, summary):
        return self.forward_map(x) @ summary.T                                      # (b, R)

    def __call__(self, x, xi, r_xi):
        return self.answer(x, self.summary(self.keys(xi), r_xi))


class QNetwork(nn.Module):
    """A plain Q network for ONE reward, the per-reward FQE oracle:

        q(x) = out_scale MLP(x) + c,    c = E_data[r] / (1 - gamma)

    The reward's "encoding" (R = 1, 1) is its scale c, so the output starts at the level of
    the reward's Q-values instead of 0 and can converge within the operators' budget.
    ``out_scale`` = 1 / (1 - gamma) is DOPE's parametrisation (the MLP fits (1 - gamma) Q).
    """

    hidden: Sequence[int] = (256, 256)
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x, xi, scale):
        return self.out_scale * MLP(self.hidden, 1, name="q")(x) + scale[:, 0]       # (b, 1)


@dataclass(frozen=True)
class NetworkSpec:
    """A registered network: how to build it and how a reward reaches it.

    ``encoding``: ``reference`` (the reward's values at the m reference points, the paper's),
    ``policy`` (values at reference states under the target policy's action, G = r + gamma U),
    ``basis`` (successor-feature weights by ridge regression), ``scale`` (one reward, FQE).
    """

    build: Callable[..., nn.Module]   # (gamma, hidden, features, n_basis, heads, absorbing, ...) -> module
    encoding: str                     # reference, policy, basis or scale
    control: bool                     # a control operator (``resolvent optimize``)
    label: str                        # name in tables and plots


def _check_heads(heads: int) -> int:
    if heads < 1:
        raise ValueError(f"heads (max-out's K) must be >= 1, got {heads}")
    return heads


NETWORKS: dict[str, NetworkSpec] = {
    "attention": NetworkSpec(lambda g, h, f, n, k, a, **kw: AttentionOperator(g, h, f, a), "reference", False,
                             "attention"),
    "linear": NetworkSpec(lambda g, h, f, n, k, a, **kw: LinearOperator(g, h, f), "reference", False, "linear"),
    "vanilla": NetworkSpec(lambda g, h, f, n, k, a, **kw: VanillaOperator(h, f), "reference", False, "vanilla"),
    "sf": NetworkSpec(lambda g, h, f, n, k, a, **kw: SuccessorFeatures(n, h), "basis", False,
                      "successor features"),
    "maxout": NetworkSpec(lambda g, h, f, n, k, a, **kw: MaxOutOperator(g, h, f, _check_heads(k)), "reference", True,
                          "max-out"),
    "fqe": NetworkSpec(lambda g, h, f, n, k, a, **kw: QNetwork(h), "scale", False, "FQE (per reward)"),
    "favor": NetworkSpec(lambda g, h, f, n, k, a, random_features=256, kernel_heads=4, **kw: KernelOperator(
        g, h, f, random_features, "favor", a, kernel_heads), "policy", False, "favor (under pi, whole dataset)"),
    "pi-attention": NetworkSpec(lambda g, h, f, n, k, a, kernel_heads=4, **kw: KernelOperator(
        g, h, f, 1, "softmax", a, kernel_heads), "policy", False, "attention under pi"),
    "fb": NetworkSpec(lambda g, h, f, n, k, a, **kw: ForwardBackward(h, f), "policy", False, "forward-backward"),
}


def make_network(method: str, gamma: float, hidden: Sequence[int], features: int, n_basis: int,
                 heads: int = MaxOutOperator.heads, absorbing: bool = False, random_features: int = 256,
                 kernel_heads: int = 4) -> nn.Module:
    """The network of ``method`` with the experiment's sizes (``heads``: max-out's K;
    ``absorbing``: the absorbing-state slot of attention and the kernel operators;
    ``random_features``: favor's M; ``kernel_heads``: the kernel operators' mixture H)."""
    if method not in NETWORKS:
        raise ValueError(f"unknown method {method!r}; known: {sorted(NETWORKS)}")
    return NETWORKS[method].build(gamma, tuple(hidden), features, n_basis, heads, absorbing,
                                  random_features=random_features, kernel_heads=kernel_heads)
