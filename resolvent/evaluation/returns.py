"""Episodic returns of policies in the real environment, many episodes in lockstep.

P policies (e.g. seeds x rewards) each run E episodes (``envs.rollout``: all P E environments
step together, every step ONE batched policy call). Each policy's episodes are scored under its
own reward, a callable over the stored transition quantities (``obs``, ``action``,
``next_obs`` and the family's extras) like every reward in resolvent: the rollout records
those quantities and the rewards are evaluated afterwards, vectorised.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from resolvent.envs import Reward, actor_rollout, rollout
from resolvent.families import RewardFamily


def episodic_returns(family: RewardFamily, act: Callable[[np.ndarray], np.ndarray],
                     rewards: Sequence[Reward], episodes: int, seed: int = 0,
                     desc: str = "returns", progress: bool = True) -> np.ndarray:
    """Returns (P, E) of P reward-dependent policies, policy p scored under ``rewards[p]``."""
    ro = rollout(family, act, len(rewards), episodes, seed, desc, progress)
    return np.stack([ro.returns(r, p) for p, r in enumerate(rewards)])


def actor_returns(family: RewardFamily, actor: Callable[[np.ndarray], np.ndarray],
                  rewards: Sequence[Reward], episodes: int, seed: int = 0,
                  progress: bool = True) -> np.ndarray:
    """Returns (R, E) of ONE reward-independent policy under each reward: one rollout serves
    every reward."""
    ro = actor_rollout(family, actor, episodes, seed, progress)
    return np.stack([ro.returns(r) for r in rewards])
