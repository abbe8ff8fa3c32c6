"""The model-based expansion distilled into the operator: G_K's accuracy at one forward pass.

The expansion G_K (``algorithms/expansion.py``) answers a reward by K steps of the one-step model
under pi and the operator after them; at K = 400 that is the most accurate answer measured here,
but a new set of points costs a 400-step rollout of every ensemble member. Distillation trains
the operator's own network (the student, started at the trained operator, the teacher) to give
G_K's answers by itself:

    u_i[r] = (G_K[r](x_i) - r(x_i, .)) / gamma                          (the target of U at x_i)
    L(theta) = mean_{r, i} w_r (U_theta[r](x_i) - u_i[r])^2,   w_r = 1 / (var_i u_i[r] + eps), mean 1

over P state-actions x_i of the data (with ``along`` > 0 also every kept member's own rollout
states x_t = (s_t, pi(s_t)), t = every, 2 every, ... <= along, their target the rest of the same
rollout, G_{K-t}: ``expansion.along_q``) and a fixed set of rewards (the prior's: the family's
training rewards and fresh generic draws), each reward encoded at ``n_refs`` reference states
drawn afresh every step from the pool, as in training (``policy_fqe``). The student is the same
network, so G = r + gamma U_theta stays linear and monotone in r, and constant-exact where the
teacher's network is (favor), by its architecture; only how well it generalises from the
distilled rewards to others is a question of data. Measured on Pendulum-Angle expert (favor,
K = 400; results/accuracy/distil/): the student's R^2 rises over the operator's at every kind of
point (probes at the dataset states 0.76 -> 0.95, along pi's trajectories 0.77 -> 0.91), far
from G_400's own (1.00): the operator's network (a mixture of four kernel measures) cannot hold
the expansion's occupancy. Targets along the rollouts (``along``) fit better and score worse at
the data's states (probe R^2 0.95 -> 0.90): the network trades accuracy between point sets.
fb's student diverges (its z is a mean over the few references of a step); the defaults are the
best measured for favor.

Pure pieces: ``DistilConfig``, ``DistilData``, ``loss``, ``update``, and ``train``, vmapped over
the network seeds and scanned over steps. The targets come from a trained model
(``experiments.evaluate.distilled_entries``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax


@dataclass(frozen=True)
class DistilConfig:
    """Distillation of the expansion G_K into the operator (``METHOD+dK``)."""

    horizon: int = 0              # K, the expansion G_K distilled (0: none)
    points: int = 4096            # state-actions of the data where G_K's targets are computed
    rewards: int = 256            # generic rewards drawn from the prior (besides the family's training ones)
    steps: int = 12_000           # Adam steps
    lr: float = 3e-4              # Adam learning rate (the student starts at the teacher)
    batch_size: int = 256         # points per step
    n_refs: int = 1024            # reference states per step, where the rewards are encoded
    along: int = 0                # targets also at the rollouts' own states s_t, t <= along (0: at the points only)
    along_every: int = 20         # every how many rollout steps such a target is taken
    kernel_heads: int = 0         # a wider student: favor's / pi-attention's kernels, a multiple of theirs (0: as is)

    def __post_init__(self):
        for name in ("points", "rewards", "steps", "batch_size", "n_refs", "along_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"distil.{name} must be an integer >= 1, got {v!r}")
        heads = self.kernel_heads
        if isinstance(heads, bool) or not isinstance(heads, int) or heads < 0:
            raise ValueError(f"distil.kernel_heads must be an integer >= 0 (0: the operator's own), got {heads!r}")
        if isinstance(self.horizon, bool) or not isinstance(self.horizon, int) or self.horizon < 0:
            raise ValueError(f"distil.horizon must be an integer >= 0 (0: no distillation), got {self.horizon!r}")
        along = self.along
        if isinstance(along, bool) or not isinstance(along, int) or not 0 <= along < max(self.horizon, 1):
            raise ValueError(f"distil.along must be an integer from 0 to horizon - 1 = {max(self.horizon - 1, 0)} "
                             f"(rollout steps where targets are also taken), got {self.along!r}")
        if not self.lr > 0:
            raise ValueError(f"distil.lr must be > 0, got {self.lr}")


class DistilData(NamedTuple):
    """What one network seed is distilled on."""

    x: jax.Array        # (P, dx) normalised (s, a): the points
    u: jax.Array        # (R, P) u_i[r], the targets of U
    ref_x: jax.Array    # (N, dx) normalised (s_j, pi(s_j)): the reference pool
    ref_r: jax.Array    # (R, N) the rewards' values there, scored under pi
    weight: jax.Array   # (R,) w_r


def target_weights(u: jax.Array) -> jax.Array:
    """w_r = 1 / (var_i u_i[r] + 1e-2), normalised to mean 1: every reward counts alike. u (..., R, P)."""
    w = 1.0 / (jnp.var(u, axis=-1) + 1e-2)
    return w / jnp.mean(w, axis=-1, keepdims=True)


def loss(params, network: nn.Module, data: DistilData, idx: jax.Array, ref: jax.Array) -> jax.Array:
    """L(theta) on the points ``idx`` (b,), the rewards encoded at the reference states ``ref`` (m,)."""
    u = network.apply(params, data.x[idx], data.ref_x[ref], data.ref_r[:, ref])      # (b, R)
    return jnp.mean((u - data.u[:, idx].T) ** 2 * data.weight)


def update(params, opt_state, network: nn.Module, config: DistilConfig, data: DistilData, key: jax.Array):
    """One Adam step on a fresh batch of points and reference states: (params, opt_state, loss)."""
    k_idx, k_ref = jax.random.split(key)
    idx = jax.random.randint(k_idx, (config.batch_size,), 0, data.x.shape[0])        # (b,)
    ref = jax.random.randint(k_ref, (config.n_refs,), 0, data.ref_x.shape[0])        # (m,)
    value, grads = jax.value_and_grad(loss)(params, network, data, idx, ref)
    updates, opt_state = optax.adam(config.lr).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, value


def train(params, network: nn.Module, config: DistilConfig, data: DistilData, key: jax.Array):
    """``config.steps`` steps from ``params`` for every network seed at once: params (S, ...),
    data.u and data.weight with a leading seed axis. Returns (params, losses (S, steps))."""
    def one(p, d, k):
        def body(carry, step_key):
            p, opt = carry
            p, opt, value = update(p, opt, network, config, d, step_key)
            return (p, opt), value
        (p, _), losses = jax.lax.scan(body, (p, optax.adam(config.lr).init(p)), jax.random.split(k, config.steps))
        return p, losses

    seeds = jax.tree_util.tree_leaves(params)[0].shape[0]
    axes = DistilData(x=None, u=0, ref_x=None, ref_r=None, weight=0)
    return jax.jit(jax.vmap(one, in_axes=(0, axes, 0)))(params, data, jax.random.split(key, seeds))
