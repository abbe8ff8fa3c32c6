"""The target policy pi as a pure JAX function, from shipped actor weights.

The actor is TD3's deterministic MLP (sbx layout): ``a = low + (tanh(MLP(s)) + 1) (high - low) / 2``
with ReLU hidden layers. Weights ship in ``resolvent/policies/weights/<family>.npz``.
"""
from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.blocks import in_blocks

WEIGHTS = resources.files("resolvent.policies") / "weights"
TD3_NOISE = 0.1   # TD3's Gaussian exploration noise (absolute, MuJoCo actions are in [-1, 1]):
#                   its actor snapshots with this noise regenerate its replay buffer


@dataclass(frozen=True)
class Actor:
    """A deterministic actor: ``layers`` [(W, b), ...], action bounds ``low``/``high``."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    low: np.ndarray
    high: np.ndarray

    @property
    def action_dim(self) -> int:
        return self.layers[-1][0].shape[1]

    def params(self):
        return [(jnp.asarray(w), jnp.asarray(b)) for w, b in self.layers]

    @functools.cached_property
    def on_device(self) -> tuple:
        """(params, low, high) as JAX arrays, made once: a rollout asks the actor every step."""
        return self.params(), jnp.asarray(self.low), jnp.asarray(self.high)

    def __call__(self, obs) -> np.ndarray:
        """Actions for a batch of observations (n, ds) -> (n, da), as numpy."""
        return np.asarray(act(*self.on_device, jnp.asarray(obs, jnp.float32)))

    def save(self, path: Path, meta: dict | None = None) -> None:
        arrays = {"low": self.low, "high": self.high}
        for i, (w, b) in enumerate(self.layers):
            arrays[f"W{i}"], arrays[f"b{i}"] = w, b
        np.savez(path, **arrays)
        if meta is not None:
            Path(path).with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "Actor":
        with np.load(path) as z:
            n = sum(1 for k in z.files if k.startswith("W"))
            layers = tuple((z[f"W{i}"].astype(np.float32), z[f"b{i}"].astype(np.float32))
                           for i in range(n))
            return cls(layers, z["low"].astype(np.float32), z["high"].astype(np.float32))


def policy_hash(actor: Actor) -> str:
    """A short hash of the actor's weights: names the policy in dataset and cache metadata."""
    h = hashlib.sha256()
    for w, b in actor.layers:
        h.update(np.ascontiguousarray(w).tobytes())
        h.update(np.ascontiguousarray(b).tobytes())
    return h.hexdigest()[:12]


def _act(params, low, high, obs):
    """pi(s): obs (n, ds) -> actions (n, da)."""
    h = obs
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)                              # (n, hidden)
    w, b = params[-1]
    a = jnp.tanh(h @ w + b)                                     # (n, da) in [-1, 1]
    return low + (a + 1.0) * 0.5 * (high - low)


@jax.jit
def act(params, low, high, obs):
    """pi(s): obs (n, ds) -> actions (n, da), in blocks of rows (``resolvent.blocks``)."""
    return in_blocks(_act, arg=3)(params, low, high, obs)


def shipped_path(family_name: str, suffix: str = ".npz"):
    return WEIGHTS / f"{family_name}{suffix}"


def load_target_policy(family_name: str, path: str | Path | None = None) -> Actor:
    """The target policy of a family: the shipped actor, or the one at ``path``."""
    p = Path(path) if path is not None else shipped_path(family_name)
    if not Path(p).is_file():
        raise FileNotFoundError(
            f"no target policy for {family_name!r} at {p}; train one with "
            f"`resolvent target {family_name} --retrain --install` (needs `pip install resolvent[train]`)")
    return Actor.load(p)


def save_snapshots(path: Path, snapshots: list, times: list[int], learning_starts: int, steps: int) -> None:
    """Actor snapshots along a TD3 run (float16: they only drive data collection)."""
    arrays = {"times": np.asarray(times[:len(snapshots)]), "learning_starts": np.asarray(learning_starts),
              "steps": np.asarray(steps)}
    for k, layers in enumerate(snapshots):
        for i, (w, b) in enumerate(layers):
            arrays[f"s{k}_W{i}"], arrays[f"s{k}_b{i}"] = w.astype(np.float16), b.astype(np.float16)
    np.savez_compressed(path, **arrays)


@dataclass(frozen=True)
class Snapshots:
    """The actor along the TD3 run: ``actors[k]`` taken at step ``times[k]`` of ``steps``."""

    actors: tuple[Actor, ...]
    times: tuple[int, ...]
    learning_starts: int          # the first steps took uniformly random actions
    steps: int


def load_snapshots(family_name: str, low: np.ndarray, high: np.ndarray,
                   path: str | Path | None = None) -> Snapshots:
    """A family's TD3 actor snapshots (shipped, or at ``path``), acting within [low, high]."""
    p = Path(str(path if path is not None else shipped_path(family_name, "-snapshots.npz")))
    if not p.is_file():
        raise FileNotFoundError(f"no TD3 actor snapshots for {family_name!r} at {p}; "
                                f"run `resolvent target {family_name} --retrain --install`")
    low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
    with np.load(p) as z:
        times = tuple(int(t) for t in z["times"])
        n = sum(1 for k in z.files if k.startswith("s0_W"))
        actors = tuple(Actor(tuple((z[f"s{k}_W{i}"].astype(np.float32), z[f"s{k}_b{i}"].astype(np.float32))
                                   for i in range(n)), low, high)
                       for k in range(len(times)))
        return Snapshots(actors, times, int(z["learning_starts"]), int(z["steps"]))


def target_policy_info(family_name: str) -> dict:
    p = shipped_path(family_name, ".json")
    return json.loads(Path(p).read_text()) if Path(p).is_file() else {}
