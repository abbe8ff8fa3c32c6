"""Model-based expansion under the target policy: the first k steps from the one-step model of the
data, the rest from the operator.

    G_k[r](s, a) = sum_{t<k} gamma^t c_t r(x_t) + gamma^k c_k G[r](s_k, pi(s_k))

    x_0 = (s, a, D(s, a)),  s_{t+1} = next_obs of x_t,  x_{t+1} = (s_{t+1}, pi(s_{t+1}), D(...))
    c_0 = 1,  c_{t+1} = c_t (1 - terminated_t)        (the model's termination, clipped to [0, 1])

with D the one-step model (``algorithms/onestep.py``) and G the trained operator. The Q of a
reward is decided early by the transient of the first steps (a swing-up, a rate of change), where
an occupancy learned by Bellman backups is smoothest and a model of a deterministic system is
most exact; the expansion puts those steps in the model and leaves G the tail, discounted by
gamma^k. G_k keeps the operator's exact properties: linear and monotone in r (c_t >= 0), and
``G_k[c] = c (1 - gamma^k) / (1 - gamma) + gamma^k G[c] = c / (1 - gamma)`` where G is
constant-exact and nothing terminates. k = 0 is G itself.

With an ensemble model that stops (``OneStepConfig.stop``), each point's rollout ends early, at
the first step tau whose members' disagreement exceeds ``model.stop_at``, and the operator answers
from there:

    G_tau[r](s, a) = sum_{t<tau} gamma^t c_t r(x_t) + gamma^tau c_tau G[r](s_tau, a_tau)

(a_0 = a, then pi's actions; tau = k where the members agree all the way). tau is a stopping time
of the rollout, the same for every reward, so linearity, monotonicity and the constants hold
point by point as above.

The rollout does not depend on the reward: ``expand`` runs it once per set of query points, and
``expanded_q`` answers every reward from it with k reward evaluations and one operator call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import numpy as np

from resolvent.algorithms.onestep import OneStepModel, members, spread, transition
from resolvent.rewards.probes import evaluate_reward

Policy = Callable[[np.ndarray], np.ndarray]      # observations (n, ds) -> actions (n, da)


@dataclass(frozen=True)
class Expansion:
    """A k-step rollout of the one-step model under pi from n query points."""

    steps: tuple[dict, ...]   # k transition dicts x_t (obs, action, next_obs, scalars), each (n, ...)
    alive: np.ndarray         # (k + 1, n) c_t: 1 until the model's episode terminates
    obs: np.ndarray           # (n, ds) s_tau, where the operator takes over
    action: np.ndarray        # (n, da) a_tau (pi(s_tau), or the query's action where tau = 0)
    stop: np.ndarray          # (n,) tau <= k: the model steps each point's answer takes

    @property
    def horizon(self) -> int:
        return len(self.steps)


def expand(model: OneStepModel, policy: Policy, obs: np.ndarray, action: np.ndarray, horizon: int) -> Expansion:
    """Roll the one-step model ``horizon`` steps from (obs (n, ds), action (n, da)), pi acting
    after the first step. Every predicted state is clipped to the data's range (``model.low``,
    ``model.high``): a closed loop through a learned model can run away from where it was fitted.
    A point stops at the first step where the members' disagreement exceeds ``model.stop_at``
    (never where it is 0)."""
    if horizon < 0:
        raise ValueError(f"horizon must be >= 0 (model steps before the operator), got {horizon}")
    s, a = np.asarray(obs, np.float32), np.asarray(action, np.float32)
    alive = [np.ones(len(s), np.float32)]
    steps, states, actions = [], [s], [a]
    stop = np.full(len(s), horizon)
    for t in range(horizon):
        y = members(model, s, a)                                                       # (E, n, dy)
        if model.stop_at > 0:
            late = np.asarray(spread(model, y)) > model.stop_at                            # (n,)
            stop = np.where(late & (stop == horizon), t, stop)
        x = {k: np.asarray(v) for k, v in transition(model, s, a, y.mean(0)).items()}
        steps.append(x)
        term = np.clip(x["terminated"], 0.0, 1.0) if "terminated" in x else 0.0
        alive.append(alive[-1] * (1.0 - term))
        s = x["next_obs"].astype(np.float32)
        if model.low is not None:
            s = np.clip(s, model.low, model.high)
            x["next_obs"] = s
        a = np.asarray(policy(s), np.float32).reshape(len(s), -1)
        if not np.all(np.isfinite(a)):
            raise ValueError("the target policy returned a non-finite action on the model's rollout")
        states.append(s)
        actions.append(a)
    at = np.arange(len(s))
    return Expansion(tuple(steps), np.stack(alive), np.stack(states)[stop, at], np.stack(actions)[stop, at], stop)


def expanded_q(expansion: Expansion, reward: Callable, bootstrap: Callable[[np.ndarray, np.ndarray], np.ndarray],
               gamma: float) -> np.ndarray:
    """G_k[r] at the expansion's query points: (..., n), the leading axes those of ``bootstrap``
    (G[r] at (s_k, pi(s_k)), e.g. (S, n) for S network seeds)."""
    k, tau = expansion.horizon, expansion.stop                                         # tau (n,)
    tail = np.asarray(bootstrap(expansion.obs, expansion.action), np.float64)          # (..., n)
    head = np.zeros(tail.shape[-1])
    if k:   # the k steps' transitions as one batch: one call of the reward
        batch = {key: np.concatenate([x[key] for x in expansion.steps]) for key in expansion.steps[0]}
        r = np.asarray(jax.device_get(evaluate_reward(reward, batch, "model rollout")), np.float64)
        r = r.reshape(k, -1)                                                           # (k, n)
        t = np.arange(k)[:, None]                                                      # (k, 1)
        head = (np.where(t < tau, gamma ** t * expansion.alive[:k], 0.0) * r).sum(0)   # (n,)
    return head + gamma ** tau * expansion.alive[tau, np.arange(len(tau))] * tail
