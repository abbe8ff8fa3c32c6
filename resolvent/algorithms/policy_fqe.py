"""Operator FQE with every reward scored under the target policy (the ``policy`` encoding).

The paper's operators see a reward through its values at the reference points' *behaviour*
actions; every later step of the target policy sits at (s, pi(s)), so a reward of the action
(effort, a control cost) comes out biased by how the behaviour acted. Here the first step is
exact and every later one is scored at pi's action:

    G[r](s, a) = r(s, a, .) + gamma U[r](s, a)
    U[r](s, a) = E[ (1 - d) (r(s', pi(s'), .) + gamma U[r](s', pi(s'))) ]

U is a network of the reward's values r_j = r(s_j, pi(s_j), .) at reference states (the data's
next states s', with pi's action and the one-step model's next quantities, ``onestep``). Its
Bellman loss on a batch (s, a, s', d) and all rewards of the step:

    y[r] = (1 - d) (r(s', pi(s'), .) + gamma U_target[r](s', pi(s')))
    L    = mean over batch and rewards of (U[r](s, a) - y[r])^2

Each step draws ``n_refs`` fresh reference states from the whole dataset (the next states of
transitions that did not terminate: a terminal state's reward is never collected, and a kernel
measure that could weigh it would overcount it), so the trained U is
an operator over any reference set; an inference model then encodes a reward over up to the
whole dataset (``KernelOperator``'s favor kernel: O(N) per reward). The reward prior works as
in ``fqe``: the family's rewards and fresh generic draws, all valued at the pi-scored points.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import flax.linen as nn

from resolvent.algorithms.fqe import FQEConfig, OperatorData, reward_weights
from resolvent.rewards import prior as reward_prior


def step_rewards(config: FQEConfig, data: OperatorData, idx: jax.Array, ref: jax.Array, key: jax.Array):
    """The rewards of one step, valued under pi: at the batch's next states (b, R + K) and at the
    reference states (R + K, m); ``data.rewards`` holds the data rewards' pi-scored values (R, n)
    and ``data.prior.z`` the pi-scored reward inputs of every transition."""
    r, r_ref = data.rewards[:, idx].T, data.rewards[:, ref]                 # (b, R) (R, m)
    if config.prior is not None and config.prior.generic:
        params = reward_prior.sample(config.prior, key, data.prior, config.prior.n_generic)
        r = jnp.concatenate([r, reward_prior.values(params, data.prior.z[idx])], 1)           # (b, R + K)
        r_ref = jnp.concatenate([r_ref, reward_prior.values(params, data.prior.z[ref]).T], 0)  # (R + K, m)
    return r, r_ref


def make_loss(n_refs: int):
    """The Bellman loss of U with ``n_refs`` fresh reference states per step (``fqe.update``'s
    ``loss_fn``)."""
    def loss(params, target_params, network: nn.Module, config: FQEConfig, data: OperatorData,
             idx: jax.Array, key: jax.Array) -> jax.Array:
        k_ref, k_rewards = jax.random.split(key)
        n = data.xn.shape[0]
        live = jax.random.choice(k_ref, n, (n_refs,), p=1.0 - data.done)        # (m,) non-terminal
        ref = jnp.where(jnp.any(data.done > 0), live, jax.random.randint(k_ref, (n_refs,), 0, n))
        r_next, r_ref = step_rewards(config, data, idx, ref, k_rewards)        # (b, R) (R, m)
        xi = data.xn[ref]                                                       # (m, dx)
        not_done = 1.0 - data.done[idx][:, None]                                # (b, 1)
        u_next = network.apply(target_params, data.xn[idx], xi, r_ref)          # (b, R)
        y = jax.lax.stop_gradient(not_done * (r_next + config.gamma * u_next))  # (b, R)
        u = network.apply(params, data.x[idx], xi, r_ref)                       # (b, R)
        return jnp.mean((u - y) ** 2 * reward_weights(config, r_ref))
    return loss
