"""Evaluation points where Q varies, beside the paper's reset points, with their Monte-Carlo truth.

At the paper's points (s0 from reset, a0 uniform) the true Q of one reward can vary by 1-2% of
its level (HalfCheetah, Ant), so per-state accuracy says nothing there. Two more kinds:

- ``trajectory``: reset, run the target policy pi for k ~ U{0..max_steps} steps (an episode
  that terminates on the way starts again), then take a first action a0 = pi(s) + noise
  (clipped to the action bounds; even points) or uniform (odd points). Any environment with
  reset and step.
- ``dataset``: states of the dataset itself, set in the simulator with its environment's
  ``restore(env, obs)`` (``resolvent/restore.py``), with their dataset action (even points) or
  that action plus noise (odd points). Only where a restore is known (else left out, with a
  warning naming the environment).

From each point pi rolls out as for the reset points (``roll_out``: one rollout serves every
reward), until gamma^t < tol. Noise is ``noise`` times the half range of the action bounds,
Gaussian. Every kind is reproducible per seed and cached under its own name.
"""
from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from resolvent.envs import Lockstep
from resolvent.evaluation.ground_truth import (GroundTruth, cached_ground_truth, horizon, load_ground_truth,
                                               roll_out)
from resolvent.restore import restore_for, unknown_restore

KINDS = ("reset", "trajectory", "dataset")


@dataclass(frozen=True)
class PointsConfig:
    """Where and how many evaluation points of each kind, and their Monte-Carlo horizon."""

    kinds: tuple[str, ...] = KINDS  # point kinds (reset: the paper's)
    n_reset: int = 64              # reset points (s0 from reset, a0 uniform)
    n: int = 64                    # points of each other kind
    max_steps: int = 200           # trajectory points: pi runs k ~ U{0..max_steps} steps first
    noise: float = 0.3             # perturbation of a first action, times the action half range
    gamma: float = 0.99            # discount
    tol: float = 1e-5              # rollouts run until gamma^t < tol
    seed: int = 0                  # the points' seed

    def __post_init__(self):
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown evaluation point kinds {unknown}; known: {list(KINDS)}")
        for name in ("n_reset", "n"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_steps < 0 or self.noise < 0:
            raise ValueError(f"max_steps and noise must be >= 0, got {self.max_steps} and {self.noise}")


def perturbed(actions: np.ndarray, noise: float, low: np.ndarray, high: np.ndarray, rng) -> np.ndarray:
    """``actions + noise * (high - low) / 2 * N(0, 1)``, clipped to [low, high]: (n, da)."""
    a = actions + noise * (high - low) / 2 * rng.standard_normal(actions.shape)
    return np.clip(a, low, high).astype(np.float32)


def trajectory_points(spec, actor, cfg: PointsConfig) -> GroundTruth:
    """``cfg.n`` points along pi's own trajectories, rolled out (see the module)."""
    h = horizon(cfg.gamma, cfg.tol)
    rng = np.random.default_rng([cfg.seed, 1])
    envs = Lockstep(spec.env_id, cfg.n, spec.extras, max_episode_steps=cfg.max_steps + h + 1)
    for i in range(cfg.n):
        envs.reset(i, cfg.seed * 1_000_003 + 7919 * i + 2)
    k = rng.integers(0, cfg.max_steps + 1, cfg.n)                          # (n,) warm-up steps
    for t in range(int(k.max(initial=0))):
        live = t < k
        out = envs.step(np.asarray(actor(envs.obs), np.float32), live)
        for i in np.flatnonzero(live & (out.terminated | out.truncated)):
            envs.reset(i, None)                                             # continue its random stream
    low, high = envs.action_space.low, envs.action_space.high
    action = perturbed(np.asarray(actor(envs.obs), np.float32), cfg.noise, low, high, rng)
    uniform = np.arange(cfg.n) % 2 == 1
    action[uniform] = rng.uniform(low, high, size=(int(uniform.sum()), len(low)))
    return roll_out(envs, actor, action, h, cfg.gamma, f"trajectory points {spec.name}")


def restored(spec, obs: np.ndarray, restore: Callable, steps: int, seed: int) -> Lockstep:
    """One environment per state of ``obs`` (n, ds), each reset (seed ``seed``) and set to its
    state with ``restore(env, obs)``, ready for ``steps`` steps of ``roll_out``."""
    envs = Lockstep(spec.env_id, len(obs), spec.extras, max_episode_steps=steps + 1)
    for i in range(len(obs)):
        envs.reset(i, seed * 1_000_003 + 7919 * i + 3)
        envs.restore(i, restore, obs[i])
    return envs


def dataset_points(spec, actor, obs: np.ndarray, actions: np.ndarray, restore: Callable,
                   cfg: PointsConfig) -> GroundTruth:
    """States ``obs`` (n, ds) of the dataset set in the simulator with ``restore``; first action
    ``actions`` (even points) or perturbed (odd points); rolled out (see the module)."""
    h = horizon(cfg.gamma, cfg.tol)
    n = len(obs)
    envs = restored(spec, obs, restore, h, cfg.seed)
    low, high = envs.action_space.low, envs.action_space.high
    action = np.asarray(actions, np.float32).copy()
    odd = np.arange(n) % 2 == 1
    action[odd] = perturbed(action[odd], cfg.noise, low, high, np.random.default_rng([cfg.seed, 2]))
    return roll_out(envs, actor, action, h, cfg.gamma, f"dataset points {spec.name}")


def load_points(spec, actor, cfg: PointsConfig, tag: str, data: dict | None = None) -> dict[str, GroundTruth]:
    """Each kind of ``cfg.kinds`` with its rollouts (cached; reset: ``load_ground_truth``'s cache);
    ``dataset`` needs the dataset's ``data`` (obs, action) and a known restore, else is left out."""
    out = {}
    base = f"{spec.name.replace('/', '_')}-{tag}"
    common = f"g{cfg.gamma}-tol{cfg.tol}-seed{cfg.seed}"
    for kind in cfg.kinds:
        if kind == "reset":
            out[kind] = load_ground_truth(spec, actor, cfg.n_reset, cfg.gamma, cfg.tol, cfg.seed, tag=tag)
        elif kind == "trajectory":
            name = f"{base}-trajectory-n{cfg.n}-T{cfg.max_steps}-noise{cfg.noise}-{common}.npz"
            out[kind] = cached_ground_truth(name, spec.feature_keys, cfg.gamma,
                                            lambda: trajectory_points(spec, actor, cfg))
        else:
            restore = restore_for(spec.env_id)
            if restore is None:
                warnings.warn(f"no dataset points: {unknown_restore(spec.env_id)}", stacklevel=2)
            if restore is None or data is None:
                continue
            idx = np.sort(np.random.default_rng([cfg.seed, 3]).choice(len(data["obs"]), min(cfg.n, len(data["obs"])),
                                                                      replace=False))
            obs, act = np.asarray(data["obs"][idx], np.float32), np.asarray(data["action"][idx], np.float32)
            which = hashlib.sha256(obs.tobytes() + act.tobytes()).hexdigest()[:12]
            name = f"{base}-dataset-{which}-n{len(idx)}-noise{cfg.noise}-{common}.npz"
            out[kind] = cached_ground_truth(name, spec.feature_keys, cfg.gamma,
                                            lambda: dataset_points(spec, actor, obs, act, restore, cfg))
    return out
