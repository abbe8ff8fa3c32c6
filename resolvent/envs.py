"""One lockstep stepper: n environments stepping together, one batched policy call per step.

Dataset collection, Monte-Carlo ground truth, episodic returns and the TD3 target's evaluation
all step their environments through ``Lockstep``; each step's scalar quantities come from
``resolvent.transitions.step_quantities``, the one schema every reward reads. ``rollout``
records the episodes of P policies x E episodes (``Rollout``), to be scored afterwards under
any reward. Episode e of every policy starts from the same initial state (reset seed
``seed * 1000 + e``), so policies are compared on the same starts; episodes end at the
environment's termination or time limit.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import gymnasium as gym
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from resolvent.families import RewardFamily
from resolvent.transitions import step_quantities

Reward = Callable[[dict], object]


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


class Rollout:
    """Recorded steps of P policies x E episodes: quantities (T, P E, ...) and ``alive`` (T, P E)."""

    def __init__(self, steps: list[dict], n_policies: int, episodes: int):
        self.features = {k: np.stack([s[k] for s in steps]) for k in steps[0] if k != "alive"}
        self.alive = np.stack([s["alive"] for s in steps]).astype(np.float64)
        self.n_policies, self.episodes = n_policies, episodes

    def returns(self, reward: Reward, policy: int = 0) -> np.ndarray:
        """Undiscounted returns (E,) of policy ``policy``'s episodes under ``reward``."""
        cols = slice(policy * self.episodes, (policy + 1) * self.episodes)
        t = self.alive.shape[0]
        feats = {k: jnp.asarray(v[:, cols].reshape((t * self.episodes,) + v.shape[2:]))
                 for k, v in self.features.items()}                               # (T E, ...)
        r = np.asarray(reward(feats), np.float64).reshape(t, self.episodes)       # (T, E)
        return (r * self.alive[:, cols]).sum(0)


def rollout(family: RewardFamily, act: Callable[[np.ndarray], np.ndarray], n_policies: int,
            episodes: int, seed: int = 0, desc: str = "returns", progress: bool = True) -> Rollout:
    """Run ``act`` (obs (P, E, ds) -> actions (P, E, da)) in P E environments in lockstep."""
    if n_policies < 1 or episodes < 1:
        raise ValueError(f"need at least one policy and one episode, got {n_policies} and {episodes}")
    envs = Lockstep(family.env_id, n_policies * episodes, family.extras)
    for i in range(n_policies * episodes):
        envs.reset(i, seed * 1000 + i % episodes)
    n, ds = envs.obs.shape
    live = np.ones(n, bool)
    steps: list[dict] = []
    limit = envs.spec.max_episode_steps if envs.spec is not None else None
    with tqdm(total=limit, desc=desc, leave=False, unit="step", disable=not progress) as bar:
        while live.any():
            obs = envs.obs.copy()
            actions = np.asarray(act(obs.reshape(n_policies, episodes, ds)), np.float32).reshape(n, -1)
            out = envs.step(actions, live)
            steps.append({"obs": obs, "action": actions, "next_obs": out.next_obs, "alive": live.copy(),
                          **out.quantities})
            live &= ~(out.terminated | out.truncated)
            bar.update(1)
    envs.close()
    return Rollout(steps, n_policies, episodes)


def actor_rollout(family: RewardFamily, actor: Callable[[np.ndarray], np.ndarray], episodes: int,
                  seed: int = 0, progress: bool = True) -> Rollout:
    """The episodes of ONE reward-independent policy (e.g. the TD3 target), ``actor`` mapping
    observations (n, ds) to actions (n, da)."""
    return rollout(family, lambda obs: np.asarray(actor(obs[0]))[None], 1, episodes, seed,
                   "target policy", progress)
