"""One lockstep stepper: n environments stepping together, one batched policy call per step.

Dataset collection, Monte-Carlo ground truth, episodic returns and the TD3 target's evaluation
all step their environments through ``Lockstep``; each step's scalar quantities come from
``resolvent.transitions.step_quantities``, the one schema every reward reads.
"""
from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import numpy as np

from resolvent.transitions import step_quantities


def make_env(env_id: str, **kwargs) -> gym.Env:
    """``gym.make`` with one clear error for an id Gymnasium does not know."""
    try:
        return gym.make(env_id, **kwargs)
    except gym.error.Error as e:
        raise ValueError(f"cannot build the environment {env_id!r}: {e}") from None


class Step(NamedTuple):
    """One lockstep step of n environments."""

    next_obs: np.ndarray      # (n, ds)
    reward: np.ndarray        # (n,) the environment's own reward
    terminated: np.ndarray    # (n,) bool
    truncated: np.ndarray     # (n,) bool
    quantities: dict          # the stepper's keys, each (n,) float32


class Lockstep:
    """``n`` copies of ``env_id``; ``step`` advances the live ones with one action array."""

    def __init__(self, env_id: str, n: int, keys: tuple[str, ...], **make_kwargs):
        self.envs = [make_env(env_id, **make_kwargs) for _ in range(n)]
        self.keys = tuple(keys)
        self.action_space = self.envs[0].action_space
        self.obs = np.zeros((n,) + self.envs[0].observation_space.shape, np.float32)   # (n, ds)

    @property
    def spec(self):
        return self.envs[0].spec

    def reset(self, i: int, seed: int | None) -> np.ndarray:
        """Reset environment ``i`` (``seed`` None: continue its random stream)."""
        self.obs[i] = self.envs[i].reset(seed=seed)[0]
        return self.obs[i]

    def restore(self, i: int, restore, obs: np.ndarray) -> None:
        """Set environment ``i``'s simulator to observation ``obs`` with a family's ``restore(env, obs)``."""
        restore(self.envs[i], obs)
        self.obs[i] = obs

    def step(self, actions: np.ndarray, live: np.ndarray) -> Step:
        """Step the environments where ``live`` (the others' rows stay zero, next_obs unchanged)."""
        n = len(self.envs)
        out = Step(self.obs.copy(), np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool),
                   {k: np.zeros(n, np.float32) for k in self.keys})
        for i in np.flatnonzero(live):
            o, r, term, trunc, info = self.envs[i].step(actions[i])
            for k, v in step_quantities(self.keys, r, term, info).items():
                out.quantities[k][i] = v
            out.next_obs[i], out.reward[i], out.terminated[i], out.truncated[i] = o, r, term, trunc
            self.obs[i] = o
        return out

    def close(self) -> None:
        for env in self.envs:
            env.close()
