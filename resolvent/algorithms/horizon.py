"""The expansion's horizon chosen per reward, from two signals that need no ground truth.

No single horizon k of the expansion G_k (``algorithms/expansion.py``) suits every reward: where
the one-step model drifts (Ant's lateral speed over 150-400 steps) a short k is right, where the
operator smooths the first steps away (a rate of change) a long one. For a reward r,

    k*(r) = argmin_{k in K}  e_model(r, k) + gamma^(2k) e_op(r)

two spreads of independent estimates, one per part of G_k:

- e_model(r, k), the head's error: the spread of the ensemble's members (``member_spread``) over
  the first k steps under pi from the query points themselves,

      e_model(r, k) = mean_points sum_e w_e (h_e - sum_e' w_e' h_e')^2,   h_e = sum_{t<k} gamma^t c^e_t r(x^e_t)

  with w_e the expansion's member weights (the ``keep`` most central);
- e_op(r), the tail's error: the variance of G[r] across several operators of the same data
  at the query points, averaged over them.

A one-step model of a single kept member has no spread; its e_model is its error on the data's
own stretches instead (``model_errors``): from S states of the data, each followed by L
continuing transitions (or ending in a termination), the model rolls out with the actions
a_hat_0 = a_0, a_hat_t = pi(s_hat_t) + a_t - pi(s_t) (the behaviour's deviation from pi
replayed at the model's state), and e_model(r, k) = mean_i (sum_{t<k} gamma^t (c_hat_t r(x_hat_t)
- c_t r(x_t)))^2, as at L beyond the stretches. That error was the first rule for every model;
it is measured where the behaviour went, not where pi goes, and the behaviour's noise puts
stretches where a small model error changes the outcome (on Pendulum-Angle expert one stretch of
100 carries almost all of it), so it picked short horizons where k = 400 was right. The members'
spread under pi picks as hindsight does on Pendulum-Angle expert (k = 400), puts every probe of
the noisy HalfCheetah within 1.5x of per-reward FQE at every kind of point, and fb's probes on
Ant-Dir expert at 24 of 24 (probe, kind of points; fb and sf the operators), against 23 with
the data's error (results/accuracy/horizon/).

Both spreads are means over the query points, so the choice is the batch's: ``resolvent
evaluate`` chooses for each kind of its points apart (``OperatorModel.choose_horizons``), as a
user asking at each kind would be answered; where one kind's spreads dominated the mean, the
choice made over all of them at once was wrong for the others (results/accuracy/horizon/per-kind).

The choice depends on r, so across rewards with different k* the answer is not linear in r;
each answer is one G_k, linear, monotone and constant-exact in its own r.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import jax
import numpy as np

from resolvent.algorithms.expansion import Expansion, Policy, rollout
from resolvent.algorithms.onestep import OneStepModel
from resolvent.rewards.probes import evaluate_reward


@dataclass(frozen=True)
class Stretches:
    """S stretches of the data, L transitions each: ``features[k]`` (L, S, ...), ``alive`` (L, S)
    1 until a transition of the stretch terminated (then 0: the rest is padding)."""

    features: dict
    alive: np.ndarray

    @property
    def length(self) -> int:
        return int(self.alive.shape[0])


def find_stretches(features: Mapping[str, np.ndarray], length: int, count: int, seed: int) -> Stretches | None:
    """Up to ``count`` starts i (drawn with ``seed``) whose next ``length`` transitions follow one
    another (next_obs of one = obs of the next) or end in a termination; the longest length
    the data has if none reaches ``length``; None where no transition continues another."""
    obs, nxt = np.asarray(features["obs"]), np.asarray(features["next_obs"])
    term = (np.asarray(features["terminated"], np.float64) > 0.5 if "terminated" in features
            else np.zeros(len(obs), bool))
    follows = np.all(np.isclose(nxt[:-1], obs[1:], rtol=1e-5, atol=1e-6), 1) & ~term[:-1]   # i -> i + 1
    last = term | np.append(~follows, True)          # a stretch through i ends with i
    stop = np.ones(len(obs), int)                    # transitions from i to that end, inclusive
    for i in range(len(obs) - 2, -1, -1):
        stop[i] = 1 if last[i] else stop[i + 1] + 1
    complete = term[np.arange(len(obs)) + stop - 1]  # ends in a termination: padded after it
    usable = np.where(complete, length, stop)
    length = int(min(length, usable.max()))
    if length < 2:
        return None
    ok = np.flatnonzero(usable >= length)
    starts = np.sort(np.random.default_rng(seed).choice(ok, min(count, len(ok)), replace=False))
    t = np.arange(length)[:, None]                                                 # (L, 1)
    idx = np.minimum(starts[None] + np.minimum(t, stop[starts][None] - 1), len(obs) - 1)   # (L, S), padded
    alive = (t < stop[starts][None]).astype(np.float32)
    single = lambda v: v.astype(np.float32) if np.issubdtype(v.dtype, np.floating) else v  # noqa: E731 - as the model
    return Stretches({k: single(np.asarray(v)[idx]) for k, v in features.items()}, alive)


def validate(model: OneStepModel, policy: Policy, stretches: Stretches) -> Expansion:
    """Every member's rollout (``expansion.rollout``, L steps, reward-independent) from the
    stretches' first transitions under a_hat_t = pi(s_hat_t) + a_t - pi(s_t), clipped to the
    data's action range."""
    f = stretches.features
    every = f["action"].reshape(-1, f["action"].shape[-1])                              # the data's action range
    low, high = every.min(0), every.max(0)
    e = model.members

    def replay(t: int, s: np.ndarray) -> np.ndarray:                                   # (E S, da)
        a = np.asarray(policy(s), np.float32)
        if t == stretches.length:   # past the data: the rollout's last action is not used
            return a
        behaved = np.asarray(policy(np.asarray(f["obs"][t], np.float32)), np.float32)  # pi(s_t) (S, da)
        deviation = np.asarray(f["action"][t], np.float32) - behaved
        return np.clip(a + np.tile(deviation, (e, 1)), low, high)

    return rollout(model, f["obs"][0], f["action"][0], stretches.length, replay)


def data_sums(stretches: Stretches, reward: Callable, gamma: float) -> np.ndarray:
    """The data's own running discounted reward sums along the stretches: (L, S)."""
    real = {key: v.reshape(-1, *v.shape[2:]) for key, v in stretches.features.items()}
    want = np.asarray(jax.device_get(evaluate_reward(reward, real, "the data's stretches")), np.float64)
    disc = gamma ** np.arange(stretches.length)[:, None]                               # (L, 1)
    return np.cumsum(disc * stretches.alive * want.reshape(stretches.alive.shape), 0)


def model_errors(validation: Expansion, stretches: Stretches, reward: Callable, horizons, gamma: float) -> np.ndarray:
    """e_model(r, k) for each k of ``horizons`` (K,) from the model's rollout along the stretches
    (``validate``): 0 at k = 0, as at L beyond the stretches."""
    steps = [min(k, stretches.length) for k in horizons]
    model_sum = validation.sums_at(reward, gamma, "the model's rollout along the data", steps)   # (K, E S)
    data_sum = data_sums(stretches, reward, gamma)                                     # (L, S)
    out = np.zeros(len(steps))
    for i, j in enumerate(steps):
        if j:
            head = validation.prefix(j).member_mean(model_sum[i])                      # (S,)
            out[i] = float(np.mean((head - data_sum[j - 1]) ** 2))
    return out


def member_spread(expansion: Expansion, reward: Callable, horizons, gamma: float) -> np.ndarray:
    """e_model(r, k) for each k of ``horizons`` (K,) from the expansion's rollout under pi at the
    query points: the kept members' weighted variance of their first k steps' discounted reward
    sum, averaged over the points (0 at k = 0; k beyond the rollout: as at its end)."""
    return point_spread(expansion, reward, horizons, gamma).mean(1)


def point_spread(expansion: Expansion, reward: Callable, horizons, gamma: float,
                 points: np.ndarray | None = None) -> np.ndarray:
    """``member_spread`` at each query point, before the mean over them: (K, n); or at the query
    points ``points`` (indices of the n) only, the reward evaluated along their rollouts alone:
    (K, len(points))."""
    e, n = expansion.weights.shape
    pts = np.arange(n) if points is None else np.asarray(points)                       # (n',)
    rows = None if points is None else (np.arange(e)[:, None] * n + pts).reshape(-1)   # (E n',) member-major
    steps = [min(k, expansion.horizon) for k in horizons]
    out = np.zeros((len(steps), len(pts)))
    if not any(steps):
        return out
    heads = expansion.sums_at(reward, gamma, "the model's rollout", steps, rows)       # (K, E n')
    for i, j in enumerate(steps):
        if j:
            w = expansion.prefix(j).weights[:, pts]                                    # (E, n')
            h = heads[i].reshape(w.shape)                                              # (E, n')
            out[i] = (w * (h - (w * h).sum(0)) ** 2).sum(0)
    return out


def choose(e_model: np.ndarray, e_op: float, horizons, gamma: float) -> int:
    """k* = argmin_k e_model(k) + gamma^(2k) e_op (the shortest on ties)."""
    k = np.asarray(horizons)
    return int(k[np.argmin(np.asarray(e_model) + gamma ** (2.0 * k) * e_op)])
