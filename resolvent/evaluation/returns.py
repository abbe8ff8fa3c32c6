"""Episodic returns of policies in the real environment, many episodes in lockstep.

P policies (e.g. seeds x rewards) each run E episodes; all P E environments step together
so that every step is ONE batched policy call. Each policy's episodes are scored under its
own reward, a callable over the stored transition quantities (``obs``, ``action``,
``next_obs`` and the family's extras) like every reward in resolvent: the rollout records
those quantities and the rewards are evaluated afterwards, vectorised. Episode e of every
policy starts from the same initial state (reset seed ``seed * 1000 + e``), so policies are
compared on the same starts. Episodes end at the environment's termination or time limit.
"""
from __future__ import annotations

from typing import Callable, Sequence

import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from resolvent.envs import Lockstep
from resolvent.families import RewardFamily

Reward = Callable[[dict], object]


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


def episodic_returns(family: RewardFamily, act: Callable[[np.ndarray], np.ndarray],
                     rewards: Sequence[Reward], episodes: int, seed: int = 0,
                     desc: str = "returns", progress: bool = True) -> np.ndarray:
    """Returns (P, E) of P reward-dependent policies, policy p scored under ``rewards[p]``."""
    ro = rollout(family, act, len(rewards), episodes, seed, desc, progress)
    return np.stack([ro.returns(r, p) for p, r in enumerate(rewards)])


def actor_rollout(family: RewardFamily, actor: Callable[[np.ndarray], np.ndarray], episodes: int,
                  seed: int = 0, progress: bool = True) -> Rollout:
    """The episodes of ONE reward-independent policy (e.g. the TD3 target), ``actor`` mapping
    observations (n, ds) to actions (n, da)."""
    return rollout(family, lambda obs: np.asarray(actor(obs[0]))[None], 1, episodes, seed,
                   "target policy", progress)


def actor_returns(family: RewardFamily, actor: Callable[[np.ndarray], np.ndarray],
                  rewards: Sequence[Reward], episodes: int, seed: int = 0,
                  progress: bool = True) -> np.ndarray:
    """Returns (R, E) of ONE reward-independent policy under each reward: one rollout serves
    every reward."""
    ro = actor_rollout(family, actor, episodes, seed, progress)
    return np.stack([ro.returns(r) for r in rewards])
