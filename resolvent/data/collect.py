"""Rolling out policies in the real environment, several episodes at once.

The behaviour policy follows BCQ's data protocol (Fujimoto et al. 2019, ``continuous_BCQ``):
with probability ``p`` a uniformly random action, otherwise ``pi(s) + N(0, (sigma a_max)^2)``
clipped to the action bounds.
"""
from __future__ import annotations

from typing import Callable

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from resolvent.envs import Lockstep
from resolvent.families import RewardFamily

Episode = dict  # observations (T+1, ds), actions (T, da), rewards (T,), terminations (T,),
#                 truncations (T,), infos {extra: (T+1,)}


def behaviour_policy(actor: Callable, space: gym.spaces.Box, p: float, sigma: float,
                     rng: np.random.Generator) -> Callable:
    """pi with BCQ's exploration: random w.p. ``p``, else Gaussian noise ``sigma * a_max``."""
    low, high = space.low, space.high
    scale = sigma * np.maximum(np.abs(low), np.abs(high))

    def policy(obs: np.ndarray) -> np.ndarray:
        a = actor(obs)
        noisy = np.clip(a + rng.normal(size=a.shape) * scale, low, high)
        uniform = rng.uniform(low, high, size=a.shape)
        return np.where(rng.uniform(size=(len(a), 1)) < p, uniform, noisy).astype(np.float32)

    return policy


def collect_episodes(family: RewardFamily, policy: Callable, n_steps: int, seed: int,
                     n_envs: int = 10, desc: str = "collect") -> list[Episode]:
    """Exactly ``n_steps`` transitions of ``policy`` in ``family.env_id``, split in episodes.

    ``n_envs`` environments step in lockstep so the policy runs batched; an episode cut by the
    step budget ends with ``truncated=True``.
    """
    envs = Lockstep(family.env_id, n_envs, family.extras)
    quota = np.asarray([n_steps // n_envs + (i < n_steps % n_envs) for i in range(n_envs)])
    done_steps = np.zeros(n_envs, int)
    episodes: list[Episode] = []
    current: list[dict] = [{}] * n_envs

    def start(i, reset_seed):
        o = envs.reset(i, reset_seed).copy()
        current[i] = {"observations": [o], "actions": [], "rewards": [], "terminations": [],
                      "truncations": [], "infos": {k: [0.0] for k in family.extras}}

    def finish(i):
        ep = current[i]
        episodes.append({
            "observations": np.asarray(ep["observations"], np.float32),
            "actions": np.asarray(ep["actions"], np.float32),
            "rewards": np.asarray(ep["rewards"], np.float32),
            "terminations": np.asarray(ep["terminations"], bool),
            "truncations": np.asarray(ep["truncations"], bool),
            "infos": {k: np.asarray(v, np.float32) for k, v in ep["infos"].items()},
        })

    for i in range(n_envs):
        start(i, seed * 100_003 + i)
    with tqdm(total=n_steps, desc=desc, leave=False, unit="step") as bar:
        while (done_steps < quota).any():
            live = done_steps < quota
            actions = policy(envs.obs)
            out = envs.step(actions, live)
            for i in np.flatnonzero(live):
                done_steps[i] += 1
                term = bool(out.terminated[i])
                trunc = bool(out.truncated[i]) or done_steps[i] == quota[i]
                ep = current[i]
                ep["observations"].append(out.next_obs[i])
                ep["actions"].append(actions[i])
                ep["rewards"].append(out.reward[i])
                ep["terminations"].append(term)
                ep["truncations"].append(trunc and not term)
                for k in family.extras:
                    ep["infos"][k].append(out.quantities[k][i])
                if term or trunc:
                    finish(i)
                    if done_steps[i] < quota[i]:
                        start(i, None)
            bar.update(int(live.sum()))
    envs.close()
    return episodes


def split_replay(buffer: dict[str, np.ndarray], family: RewardFamily) -> list[Episode]:
    """The recorded TD3 replay buffer (flat, in order) as Minari-style episodes."""
    ends = np.flatnonzero(buffer["terminated"] | buffer["truncated"])
    if len(ends) == 0 or ends[-1] != len(buffer["obs"]) - 1:
        ends = np.append(ends, len(buffer["obs"]) - 1)
    episodes, start = [], 0
    for end in ends:
        sl = slice(start, end + 1)
        last = bool(buffer["terminated"][end] or buffer["truncated"][end])
        trunc = buffer["truncated"][sl].copy()
        trunc[-1] = trunc[-1] or not last
        episodes.append({
            "observations": np.concatenate([buffer["obs"][sl], buffer["next_obs"][end][None]]),
            "actions": buffer["action"][sl],
            "rewards": np.zeros(end + 1 - start, np.float32),
            "terminations": buffer["terminated"][sl],
            "truncations": trunc,
            "infos": {k: np.concatenate([[0.0], buffer[k][sl]]).astype(np.float32)
                      for k in family.extras},
        })
        start = end + 1
    return episodes
