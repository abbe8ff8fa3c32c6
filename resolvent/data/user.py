"""Any offline dataset: a Minari dataset of any Gymnasium environment, a target policy given as
a callable, rewards written over what the dataset stores.

``load_dataset`` reads a ``minari.MinariDataset`` (or its id) into the transition schema of
``resolvent.transitions``: ``obs``, ``action``, ``next_obs``, ``terminated``, ``truncated``,
the dataset's own ``reward`` and every numeric per-step entry of its episodes' infos, with a
``DatasetSpec`` naming the environment (for ground truth) and the scalar quantities stored.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import minari
import numpy as np

from resolvent.data.dataset import validate_transitions
from resolvent.envs import make_env
from resolvent.transitions import CORE_KEYS, info_quantities

Policy = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class DatasetSpec:
    """What a dataset stores per transition besides (s, a, s'), and where it was recorded."""

    name: str                   # the Minari dataset id
    env_id: str | None          # the Gymnasium environment, for ground truth (None: no truth)
    extras: tuple[str, ...]     # scalar quantities: terminated, reward, the infos' entries

    @property
    def feature_keys(self) -> tuple[str, ...]:
        return CORE_KEYS + self.extras


def open_minari(dataset):
    """A ``MinariDataset`` from itself or its id, with one clear error for an unknown id."""
    if not isinstance(dataset, str):
        return dataset
    try:
        return minari.load_dataset(dataset)
    except Exception as e:  # noqa: BLE001 - minari raises several kinds for a missing dataset
        local = sorted(minari.list_local_datasets())
        raise ValueError(f"cannot load the Minari dataset {dataset!r} ({type(e).__name__}: {e}); "
                         f"local datasets: {local}") from None


def dataset_env_id(ds) -> str | None:
    """The id of the environment a Minari dataset was recorded in, if it says."""
    spec = getattr(ds, "env_spec", None) or getattr(ds.spec, "env_spec", None)
    return getattr(spec, "id", None)


def load_dataset(dataset, env_id: str | None = None) -> tuple[DatasetSpec, dict]:
    """The transitions of a Minari dataset (object or id) and its spec; ``env_id`` overrides
    the environment the dataset names (``"none"``: no ground truth)."""
    ds = open_minari(dataset)
    name = ds.spec.dataset_id if hasattr(ds, "spec") else str(dataset)
    parts, keys = [], None
    for ep in ds.iterate_episodes():
        t = len(ep.actions)
        if t == 0:
            continue
        obs = np.asarray(ep.observations, np.float32)
        if obs.ndim != 2 or np.asarray(ep.actions).ndim != 2:
            raise ValueError(f"{name}: resolvent needs flat (Box) observations and actions; episode "
                             f"{ep.id} has observations {obs.shape} and actions {np.shape(ep.actions)}")
        infos = {}
        for k, v in info_quantities(ep.infos or {}, per_step=True).items():
            if len(v) in (t, t + 1):                       # Minari stores the reset's info first
                infos[k] = v[len(v) - t:]
        part = {"obs": obs[:-1], "action": np.asarray(ep.actions, np.float32), "next_obs": obs[1:],
                "terminated": np.asarray(ep.terminations, bool), "truncated": np.asarray(ep.truncations, bool),
                "reward": np.asarray(ep.rewards, np.float32), **infos}
        keys = set(part) if keys is None else keys & set(part)   # infos every episode has
        parts.append(part)
    if not parts:
        raise ValueError(f"{name}: the dataset is empty (no transitions)")
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k in keys}
    extras = ("terminated", "reward") + tuple(sorted(k for k in keys if k not in CORE_KEYS + (
        "terminated", "truncated", "reward")))
    spec = DatasetSpec(name, usable_env(env_id, dataset_env_id(ds)), extras)
    validate_transitions(data, spec, data["obs"].shape[1], data["action"].shape[1],
                         getattr(ds, "action_space", None))
    return spec, data


def usable_env(given: str | None, recorded: str | None) -> str | None:
    """The environment for ground truth: ``given`` (``"none"``: no ground truth; one that does not
    build is an error), else the one the dataset was recorded in if it builds here (else None,
    with a warning)."""
    if given == "none":
        return None
    if given is not None:
        make_env(given).close()
        return given
    if recorded is None:
        return None
    try:
        make_env(recorded).close()
    except ValueError as e:
        warnings.warn(f"{e}; no ground truth: the run reports its Bellman residuals only", stacklevel=2)
        return None
    return recorded


def load_object(ref: str, what: str = "policy"):
    """``MODULE:ATTR`` (an importable module) or ``path/to/file.py:ATTR``: the object named."""
    if ":" not in ref:
        raise ValueError(f"{what} {ref!r} must be given as MODULE:ATTR or FILE.py:ATTR")
    mod_name, attr = ref.rsplit(":", 1)
    try:
        if mod_name.endswith(".py"):
            module = load_module_file(mod_name)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(mod_name)
    except (ImportError, FileNotFoundError) as e:
        raise ValueError(f"cannot import the {what}'s module {mod_name!r}: {e}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"{mod_name} has no attribute {attr!r} (the {what})")
        obj = getattr(obj, part)
    return obj


def load_module_file(path: str | Path):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file {str(path)!r}")
    spec = importlib.util.spec_from_file_location(f"resolvent_user_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_probes(path: str | Path) -> dict[str, Callable]:
    """``PROBES = {name: callable}`` from a Python file."""
    try:
        module = load_module_file(path)
    except FileNotFoundError as e:
        raise ValueError(f"probe rewards: {e}") from None
    probes = getattr(module, "PROBES", None)
    if not isinstance(probes, dict) or not all(callable(v) for v in probes.values()):
        raise ValueError(f"{path} must define PROBES = {{name: callable}}, a dict of reward callables")
    return dict(probes)


def checked_policy(policy: Policy, obs: np.ndarray, action_dim: int, low=None, high=None) -> Policy:
    """``policy`` as ``(n, ds) -> (n, da)`` float32, checked once on dataset observations:
    the wrong shape or a NaN get one clear error naming the problem."""
    if not callable(policy):
        raise ValueError(f"the policy must be a callable obs (n, ds) -> actions (n, da), got {type(policy).__name__}")

    def act(o):
        return np.asarray(policy(np.asarray(o, np.float32)), np.float32)

    probe = obs[: min(len(obs), 64)]
    try:
        a = act(probe)
    except Exception as e:  # noqa: BLE001 - the user's code: report what it got and what failed
        raise ValueError(f"the policy failed on the dataset's observations of shape {probe.shape}: "
                         f"{type(e).__name__}: {e}") from None
    if a.shape != (len(probe), action_dim):
        raise ValueError(f"the policy returned actions of shape {a.shape} for observations of shape "
                         f"{probe.shape}; the dataset's actions have shape (n, {action_dim})")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"the policy returned non-finite actions (NaN or inf) for "
                         f"{int((~np.isfinite(a)).any(1).sum())} of {len(probe)} dataset observations")
    if low is not None and high is not None:
        return lambda o: np.clip(act(o), low, high)
    return act
