"""Operator DQN: the paper's Algorithm 1 for control, with the max over next actions.

For a batch of transitions (s, a, s') and ALL training rewards at once (R of them),

    y[r](s, a) = r(s, a) + gamma (1 - terminated) max_{a' in A} G_target[r](s', a')
    L(theta)   = mean over batch and rewards of (G_theta[r](s, a) - y[r](s, a))^2

(with ``double=True``, van Hasselt et al.'s Double DQN target: the online network picks a',
the target network values it, ``G_target[r](s', argmax_a' G_theta[r](s', a'))``)

on a finite action set A: a continuous action space is discretised on a grid (Pendulum: 11
or 21 torques) and every dataset action is mapped to its nearest grid action. The greedy
policy for a reward r is ``argmax_a G[r](s, a)``.

Cost: the target needs every next action for every reward and, for the max-out operator,
every copy. The network runs once on the b A rows (s', a'); inside it the attention weights
(b A, K, m) are computed once and applied to all R rewards at once (each copy is linear in r),
and the K copies share their hidden layers, so a step costs about one single-operator step on
b A rows (``benchmarks/control_throughput.py`` measures it).

The optimiser step (Adam, Polyak target) is operator FQE's, with this file's ``loss``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms import fqe
from resolvent.algorithms.fqe import FQEConfig


@dataclass(frozen=True)
class DQNConfig(FQEConfig):
    """Hyper-parameters of operator DQN: those of operator FQE (the paper's), and the target."""

    double: bool = False         # Double DQN target: a' by the online network, valued by the target


class DQNData(NamedTuple):
    """The offline data operator DQN trains on, already on device."""

    x: jax.Array        # (n, dx) normalised (s, a) with a on the action grid
    next_s: jax.Array   # (n, ds) normalised s'
    actions: jax.Array  # (A, da) normalised grid actions
    rewards: jax.Array  # (R, n) training rewards' values on every transition
    done: jax.Array     # (n,) 1.0 where the transition terminated
    xi: jax.Array       # (m, dx) normalised reference points
    enc: jax.Array      # (R, m) encodings: the training rewards at the reference points


def action_grid(low, high, n: int) -> np.ndarray:
    """The product grid of ``n`` evenly spaced values per action dimension: (n^da, da)."""
    low, high = np.asarray(low, np.float32).ravel(), np.asarray(high, np.float32).ravel()
    if n < 2:
        raise ValueError(f"n_actions must be >= 2 (per action dimension), got {n}")
    if len(low) > 3:
        raise ValueError(f"an action grid over {len(low)} dimensions has {n}^{len(low)} actions; "
                         f"use operator BCQ for high-dimensional action spaces")
    axes = [np.linspace(lo, hi, n, dtype=np.float32) for lo, hi in zip(low, high)]
    return np.array(list(itertools.product(*axes)), np.float32)


def nearest_actions(actions: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Index of the nearest grid action of every action (n, da) -> (n,)."""
    d = ((np.asarray(actions)[:, None, :] - grid[None]) ** 2).sum(-1)    # (n, A)
    return np.argmin(d, axis=1)


def next_inputs(next_s: jax.Array, actions: jax.Array) -> jax.Array:
    """Every (s', a') pair: (b, ds), (A, da) -> (b A, dx), rows grouped by s'."""
    b, a = next_s.shape[0], actions.shape[0]
    s = jnp.broadcast_to(next_s[:, None, :], (b, a, next_s.shape[1]))      # (b, A, ds)
    acts = jnp.broadcast_to(actions[None], (b, a, actions.shape[1]))       # (b, A, da)
    return jnp.concatenate([s, acts], -1).reshape(b * a, -1)               # (b A, dx)


def loss(params, target_params, network: nn.Module, config: DQNConfig, data: DQNData,
         idx: jax.Array, key: jax.Array | None = None) -> jax.Array:
    """Bellman optimality loss of Algorithm 1 on the transitions ``idx`` (b,), all rewards
    (the training rewards only: ``key``, for reward draws, is unused)."""
    b, n_act = idx.shape[0], data.actions.shape[0]
    r = data.rewards[:, idx].T                                             # (b, R)
    not_done = 1.0 - data.done[idx][:, None]                               # (b, 1)
    xn = next_inputs(data.next_s[idx], data.actions)                       # (b A, dx)
    g_next = network.apply(target_params, xn, data.xi, data.enc).reshape(b, n_act, -1)  # (b, A, R)
    if config.double:
        g_online = network.apply(params, xn, data.xi, data.enc).reshape(b, n_act, -1)    # (b, A, R)
        best = jnp.argmax(g_online, axis=1)[:, None, :]                    # (b, 1, R)
        g_next = jnp.take_along_axis(g_next, best, axis=1)[:, 0]           # (b, R)
    else:
        g_next = g_next.max(axis=1)                                        # (b, R)
    y = jax.lax.stop_gradient(r + config.gamma * not_done * g_next)        # (b, R)
    g = network.apply(params, data.x[idx], data.xi, data.enc)              # (b, R)
    return jnp.mean((g - y) ** 2)


make_trainer = partial(fqe.make_trainer, loss_fn=loss)
make_initializer = fqe.make_initializer


def greedy(network: nn.Module, params, s: jax.Array, actions: jax.Array, xi: jax.Array,
           enc_rows: jax.Array) -> jax.Array:
    """Greedy action indices ``argmax_a G[r_i](s_i, a)``, each state with its own reward.

    s (N, ds) normalised states, actions (A, da) normalised grid, enc_rows (N, m) -> (N,).
    """
    n, n_act = s.shape[0], actions.shape[0]
    enc = jnp.repeat(enc_rows, n_act, axis=0)                              # (N A, m)
    q = network.apply(params, next_inputs(s, actions), xi, enc, paired=True)   # (N A,)
    return jnp.argmax(q.reshape(n, n_act), axis=1)                         # (N,)


def make_act(network: nn.Module, grid: np.ndarray, grid_norm: np.ndarray):
    """``act(params, s, xi, enc_rows, key) -> (N, da)`` raw grid actions (key unused)."""
    grid, grid_norm = jnp.asarray(grid), jnp.asarray(grid_norm)

    def act(params, s, xi, enc_rows, key):
        return grid[greedy(network, params, s, grid_norm, xi, enc_rows)]   # (N, da)

    return act
