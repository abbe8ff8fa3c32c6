"""Monte-Carlo ground truth ``q_{pi,r}(y_i)`` for every reward of a family at once.

``y_i = (s0_i, a0_i)``: s0 from the environment's initial-state distribution, a0 uniform in
the action space. pi and the dynamics are deterministic, so one rollout per y_i serves every
reward: we store the rollout's per-step quantities and evaluate rewards afterwards,

    q_{pi,r}(y_i) = sum_{t < H} gamma^t r(x_t),    H = ceil(log(tol) / log(gamma)),

ignoring the environment's time limit and stopping at a termination (absorbing, reward 0).
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from resolvent.envs import Lockstep
from resolvent.families import RewardFamily
from resolvent.io import atomic_write_bytes, file_lock
from resolvent.paths import cache_dir
from resolvent.policies.actor import Actor, policy_hash


@dataclass(frozen=True)
class GroundTruth:
    """Rollouts from n initial points: ``features`` (n, H, ...) and ``alive`` (n, H)."""

    obs0: np.ndarray          # (n, ds) initial states
    action0: np.ndarray       # (n, da) initial actions
    features: dict            # per-step transition quantities, each (n, H, ...)
    alive: np.ndarray         # (n, H) 1 while the episode has not terminated before step t
    gamma: float

    @property
    def horizon(self) -> int:
        return self.alive.shape[1]

    def q(self, reward: Callable) -> np.ndarray:
        """q_{pi,r}(y_i) for a reward callable over features: (n,)."""
        n, h = self.alive.shape
        flat = {k: jnp.asarray(v.reshape((n * h,) + v.shape[2:])) for k, v in self.features.items()}
        r = np.asarray(reward(flat), np.float64).reshape(n, h)            # (n, H)
        return (r * self.alive * self.gamma ** np.arange(h)).sum(axis=1)

    def q_family(self, family: RewardFamily, params) -> np.ndarray:
        """q for each family parameter: (R, n)."""
        return np.stack([self.q(family.reward_callable(p)) for p in np.asarray(params)])


def horizon(gamma: float, tol: float) -> int:
    return int(math.ceil(math.log(tol) / math.log(gamma)))


def rollout_ground_truth(family: RewardFamily, actor: Actor, n: int, gamma: float = 0.99,
                         tol: float = 1e-5, seed: int = 0) -> GroundTruth:
    """Roll pi out from n initial (s0, a0), all in lockstep, for H steps."""
    h = horizon(gamma, tol)
    envs = Lockstep(family.env_id, n, family.extras, max_episode_steps=h + 1)
    rng = np.random.default_rng(seed)
    for i in range(n):
        envs.reset(i, seed * 1_000_003 + 7919 * i + 1)
    space = envs.action_space
    action = rng.uniform(space.low, space.high, size=(n,) + space.shape).astype(np.float32)
    return roll_out(envs, actor, action, h, gamma, f"ground truth {family.name}")


def roll_out(envs: Lockstep, actor: Actor, action0: np.ndarray, h: int, gamma: float, desc: str) -> GroundTruth:
    """From the environments' current states ``envs.obs`` take ``action0`` (n, da), then follow pi
    for up to ``h`` steps in all, recording every step's quantities; closes ``envs``."""
    obs, action = envs.obs, np.asarray(action0, np.float32)
    n = len(obs)
    obs0, action0 = obs.copy(), action.copy()
    ds, da = obs.shape[1], action.shape[1]
    feats = {"obs": np.zeros((n, h, ds), np.float32), "action": np.zeros((n, h, da), np.float32),
             "next_obs": np.zeros((n, h, ds), np.float32)}
    feats.update({k: np.zeros((n, h), np.float32) for k in envs.keys})
    alive = np.zeros((n, h), np.float32)
    live = np.ones(n, bool)
    for t in tqdm(range(h), desc=desc, leave=False, unit="step"):
        if t > 0:
            action = np.asarray(actor(obs), np.float32)
        alive[:, t] = live
        feats["obs"][:, t], feats["action"][:, t] = obs, action
        out = envs.step(action, live)
        feats["next_obs"][:, t] = out.next_obs
        for k in envs.keys:
            feats[k][:, t] = out.quantities[k]
        live &= ~out.terminated
        if not live.any():
            break
    envs.close()
    return GroundTruth(obs0, action0, feats, alive, gamma)


def load_ground_truth(family: RewardFamily, actor: Actor, n: int, gamma: float = 0.99,
                      tol: float = 1e-5, seed: int = 0, tag: str | None = None) -> GroundTruth:
    """The cached ground truth, or a fresh rollout stored in ``$RESOLVENT_HOME/ground_truth``.

    ``family`` is anything with ``name``, ``env_id`` and ``extras`` (a ``RewardFamily`` or a
    ``DatasetSpec``); ``tag`` names the policy in the cache (default: the actor's weights' hash).
    """
    tag = tag if tag is not None else policy_hash(actor)
    name = f"{family.name.replace('/', '_')}-{tag}-n{n}-g{gamma}-tol{tol}-seed{seed}.npz"
    return cached_ground_truth(name, family.feature_keys, gamma,
                               lambda: rollout_ground_truth(family, actor, n, gamma, tol, seed))


def cached_ground_truth(name: str, feature_keys: tuple[str, ...], gamma: float,
                        make: Callable[[], GroundTruth]) -> GroundTruth:
    """The ground truth cached as ``$RESOLVENT_HOME/ground_truth/name``, else ``make()``, stored.
    Runs side by side that ask for the same truth (a sweep's seeds of one cell) roll it out once:
    the others wait on its lock (``name.lock`` beside it) and then read it."""
    path = cache_dir("ground_truth") / name
    with file_lock(path.with_name(f"{name}.lock"), f"the ground truth {name}"):
        gt = read_cached(path, feature_keys, gamma)
        if gt is None:
            gt = make()
            buf = io.BytesIO()
            np.savez_compressed(buf, obs0=gt.obs0, action0=gt.action0, alive=gt.alive,
                                **{f"f_{k}": v for k, v in gt.features.items()})
            atomic_write_bytes(path, buf.getvalue())
    return gt


def read_cached(path: Path, feature_keys: tuple[str, ...], gamma: float) -> GroundTruth | None:
    """The ground truth stored at ``path``; None where there is none, and where it is damaged
    (unreadable, non-finite or short of a feature: derived data, removed to be rolled out again)."""
    if not path.is_file():
        return None
    try:
        with np.load(path) as z:
            feats = {k[2:]: z[k] for k in z.files if k.startswith("f_")}
            gt = GroundTruth(z["obs0"], z["action0"], feats, z["alive"], gamma)
        arrays = [gt.obs0, gt.action0, gt.alive, *feats.values()]
        if all(np.all(np.isfinite(a)) for a in arrays) and set(feature_keys) <= set(feats):
            return gt
    except Exception:  # noqa: BLE001 - truncated, not a zip, missing arrays: all damage
        pass
    path.unlink()
    return None


def mse(pred: jax.Array, truth: jax.Array) -> jax.Array:
    """Mean squared error over initial points, per reward: (R, n), (R, n) -> (R,)."""
    return jnp.mean((pred - truth) ** 2, axis=-1)


def r2(pred: jax.Array, truth: jax.Array) -> jax.Array:
    """Coefficient of determination per reward, 1 - MSE / Var(truth) over the initial points:
    (R, n), (R, n) -> (R,). 1 is exact; 0 is no better than the truth's mean, a constant."""
    var = jnp.var(truth, axis=-1)
    return 1.0 - mse(pred, truth) / jnp.maximum(var, 1e-8)
