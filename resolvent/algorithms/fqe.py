"""Operator fitted-Q evaluation: the paper's Algorithm 1 with ``a' = pi(s')``.

For a batch of transitions (s, a, s') and ALL training rewards at once (R of them),

    y[r](s, a) = r(s, a) + gamma (1 - terminated) G_target[r](s', pi(s'))
    L(theta)   = mean over batch and rewards of (G_theta[r](s, a) - y[r](s, a))^2

Adam on theta, Polyak averaging of the target (alpha = tau). A time-limit truncation
bootstraps; a termination does not. Rewards enter the network only via their encodings
``enc`` (values at the reference points, or SF weights). The same update trains the
successor features: their "rewards" are the basis functions and their encodings the identity,
and the per-reward FQE oracle: one reward, a plain Q network.

With a generic reward prior (``config.prior``), every step also draws ``n_generic`` fresh
random rewards (``rewards.prior``) and adds them to the R data rewards: the attention weights
are computed once and serve them all. ``reward_weighting`` divides each reward's squared
error by its variance over the reference points, so that rewards of every scale count alike.

``update`` is one pure jitted step; ``train_chunk`` scans it over many steps; both vmap over
seeds (a leading axis on the state and the key).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, PartitionSpec

from resolvent.config import TDConfig
from resolvent.rewards import prior as reward_prior


LR_SCHEDULES = ("constant", "cosine")   # FQEConfig.lr_schedule: a constant rate, or cosine-decayed to 0


@dataclass(frozen=True)
class FQEConfig(TDConfig):
    """Hyper-parameters of operator FQE: the TD ones (gamma, lr, tau, batch_size), and these."""

    prior: reward_prior.PriorConfig | None = None  # generic rewards drawn at every step, if generic
    reward_weighting: bool = False  # weigh each reward's error by 1 / its variance at the xi
    lr_schedule: str = "constant"  # constant, or cosine: decay to 0 over decay_steps
    decay_steps: int = 0         # the cosine schedule's length (an experiment sets its steps)
    weight_decay: float = 0.0    # AdamW's decoupled weight decay, per unit learning rate (0: Adam)
    clip_targets: bool = False   # clip each Bellman target to [min r, max r] / (1 - gamma) over the data

    def __post_init__(self):
        super().__post_init__()
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"unknown lr_schedule {self.lr_schedule!r}; known: {list(LR_SCHEDULES)}")
        if not 0 <= self.weight_decay < float("inf"):
            raise ValueError(f"weight_decay must be >= 0 and finite, got {self.weight_decay}")
        if self.clip_targets and self.prior is not None and self.prior.generic:
            raise ValueError("clip_targets bounds the data's rewards; a generic prior's fresh draws have no bounds")

    def optimizer(self) -> optax.GradientTransformation:
        """Adam (AdamW with ``weight_decay``) at the configured rate (constant, or cosine-decayed to 0)."""
        lr = (optax.cosine_decay_schedule(self.lr, self.decay_steps)
              if self.lr_schedule == "cosine" and self.decay_steps > 0 else self.lr)
        return optax.adamw(lr, weight_decay=self.weight_decay) if self.weight_decay else optax.adam(lr)


def dope(config: FQEConfig) -> FQEConfig:
    """DOPE's FQE recipe (Fu et al. 2021, google-research ``policy_eval``) on ``config``'s
    gamma and batch: AdamW at 3e-4 with decay 1e-5 per step, Polyak 0.005, targets clipped to
    what a discounted return of the data's rewards can be. (Its output scaling by 1 / (1 - gamma)
    is the network's: ``QNetwork.out_scale``.)"""
    return dataclasses.replace(config, lr=3e-4, weight_decay=1e-5 / 3e-4, tau=0.005, lr_schedule="constant",
                               clip_targets=True, prior=None)


class OperatorData(NamedTuple):
    """The offline data an operator trains on, already on device."""

    x: jax.Array        # (n, dx) normalised (s, a)
    xn: jax.Array       # (n, dx) normalised (s', pi(s'))
    rewards: jax.Array  # (R, n) training rewards' values on every transition
    done: jax.Array     # (n,) 1.0 where the transition terminated
    xi: jax.Array       # (m, dx) normalised reference points
    enc: jax.Array      # (R, e) encodings of the training rewards
    prior: reward_prior.PriorData | None = None  # reward inputs for generic draws


class TrainState(NamedTuple):
    params: Any
    target_params: Any
    opt_state: Any
    step: jax.Array


def init(network: nn.Module, config: FQEConfig, key: jax.Array, data: OperatorData) -> TrainState:
    """Fresh parameters (target = online) and Adam state."""
    params = network.init(key, data.x[:1], data.xi, data.enc)
    opt_state = config.optimizer().init(params)
    return TrainState(params, params, opt_state, jnp.zeros((), jnp.int32))


def step_rewards(config: FQEConfig, data: OperatorData, idx: jax.Array, key: jax.Array):
    """The rewards of one step: values on the batch (b, R + K) and encodings (R + K, e), the
    data's R rewards followed by K fresh generic draws when the prior is generic."""
    r, enc = data.rewards[:, idx].T, data.enc                           # (b, R) (R, e)
    if config.prior is not None and config.prior.generic:
        r_gen, enc_gen = reward_prior.draw(config.prior, key, data.prior, idx)   # (b, K) (K, m)
        r, enc = jnp.concatenate([r, r_gen], 1), jnp.concatenate([enc, enc_gen], 0)
    return r, enc


def reward_weights(config: FQEConfig, enc: jax.Array) -> jax.Array:
    """Per-reward loss weights (R,): 1, or 1 / variance at the reference points."""
    if not config.reward_weighting:
        return jnp.ones(enc.shape[0])
    w = 1.0 / (jnp.var(enc, axis=1) + 1e-2)                             # (R,)
    return w / jnp.mean(w)


def loss(params, target_params, network: nn.Module, config: FQEConfig, data: OperatorData,
         idx: jax.Array, key: jax.Array) -> jax.Array:
    """Bellman loss of Algorithm 1 on the transitions ``idx`` (b,), all rewards of the step."""
    r, enc = step_rewards(config, data, idx, key)                       # (b, R) (R, e)
    x, xn = data.x[idx], data.xn[idx]                                   # (b, dx) (b, dx)
    not_done = 1.0 - data.done[idx][:, None]                            # (b, 1)
    g_next = network.apply(target_params, xn, data.xi, enc)             # (b, R)
    y = r + config.gamma * not_done * g_next                            # (b, R)
    if config.clip_targets:   # y in [min r, max r] / (1 - gamma), each data reward's own range
        y = jnp.clip(y, data.rewards.min(1) / (1.0 - config.gamma), data.rewards.max(1) / (1.0 - config.gamma))
    y = jax.lax.stop_gradient(y)
    g = network.apply(params, x, data.xi, enc)                          # (b, R)
    return jnp.mean((g - y) ** 2 * reward_weights(config, enc))


def update(state: TrainState, data: OperatorData, key: jax.Array, network: nn.Module,
           config: FQEConfig, loss_fn=loss, axis_name: str | None = None) -> tuple[TrainState, jax.Array]:
    """One step: sample a batch, Adam on the Bellman loss, Polyak target update.

    Under ``axis_name`` (a ``shard_map`` over devices) each device takes its slice of the
    batch and the gradients are averaged: the same step, split across devices.

    ``loss_fn`` (same signature as ``loss``) is the Bellman loss; operator DQN passes its own.
    """
    n = data.x.shape[0]
    k_idx, k_rewards = jax.random.split(key)
    idx = jax.random.randint(k_idx, (config.batch_size,), 0, n)         # (b,)
    if axis_name is not None:  # data parallel: this device's slice of the batch
        shard = config.batch_size // jax.lax.psum(1, axis_name)
        idx = jax.lax.dynamic_slice(idx, (jax.lax.axis_index(axis_name) * shard,), (shard,))
    value, grads = jax.value_and_grad(loss_fn)(state.params, state.target_params, network,
                                               config, data, idx, k_rewards)
    if axis_name is not None:  # the mean over the whole batch, identical on every device
        value, grads = jax.lax.pmean((value, grads), axis_name)
    updates, opt_state = config.optimizer().update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    target = optax.incremental_update(params, state.target_params, config.tau)
    return TrainState(params, target, opt_state, state.step + 1), value


def train_chunk(state: TrainState, data: OperatorData, key: jax.Array, n_steps: int,
                network: nn.Module, config: FQEConfig, loss_fn=loss,
                axis_name: str | None = None) -> tuple[TrainState, jax.Array]:
    """``n_steps`` updates with ``lax.scan``; returns the new state and the mean loss."""
    def body(s, k):
        return update(s, data, k, network, config, loss_fn, axis_name)

    state, losses = jax.lax.scan(body, state, jax.random.split(key, n_steps))
    return state, losses.mean()


def make_trainer(network: nn.Module, config: FQEConfig, n_steps: int, loss_fn=loss):
    """``train(states, data, keys)`` jitted and vmapped over seeds (leading axis)."""
    def one(state, data, key):
        return train_chunk(state, data, key, n_steps, network, config, loss_fn)

    return jax.jit(jax.vmap(one, in_axes=(0, None, 0)))


def make_parallel_trainer(network: nn.Module, config: FQEConfig, n_steps: int, loss_fn=loss,
                          devices=None):
    """Like ``make_trainer`` (same inputs and outputs, vmapped over seeds), but each step's
    batch is split across ``devices`` (default: all local devices) and the gradients averaged.

    On a CPU, XLA runs one small network's step on about one core; exposing the cores as
    devices (``XLA_FLAGS=--xla_force_host_platform_device_count=2``) lets one network use
    them all. The batch size must divide evenly across the devices.
    """
    devices = list(devices if devices is not None else jax.local_devices())
    if config.batch_size % len(devices):
        raise ValueError(f"batch_size {config.batch_size} does not split across {len(devices)} devices")

    def one(state, data, key):
        return train_chunk(state, data, key, n_steps, network, config, loss_fn, axis_name="data")

    mesh = Mesh(devices, ("data",))
    replicated = PartitionSpec()
    body = jax.shard_map(jax.vmap(one, in_axes=(0, None, 0)), mesh=mesh,
                         in_specs=(replicated, replicated, replicated), out_specs=replicated)
    return jax.jit(body)


def make_initializer(network: nn.Module, config: FQEConfig):
    """``init(keys, data)`` vmapped over seeds."""
    return jax.jit(jax.vmap(lambda k, d: init(network, config, k, d), in_axes=(0, None)))


def make_predictor(network: nn.Module):
    """``predict(params, x, xi, enc) -> (S, b, R)`` vmapped over seeds."""
    return jax.jit(jax.vmap(lambda p, x, xi, e: network.apply(p, x, xi, e),
                            in_axes=(0, None, None, None)))
