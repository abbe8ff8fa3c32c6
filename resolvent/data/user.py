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
import itertools
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import gymnasium as gym
import minari
import numpy as np
from tqdm.auto import tqdm

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
    check_box_spaces(name, getattr(ds, "observation_space", None), getattr(ds, "action_space", None))
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
    if spec.env_id is not None:
        check_env_matches(spec.env_id, name, data["obs"].shape[1], data["action"].shape[1])
    validate_transitions(data, spec, data["obs"].shape[1], data["action"].shape[1],
                         getattr(ds, "action_space", None))
    return spec, data


def record_dataset(env: gym.Env, policy: Policy, dataset_id: str, size: int, seed: int = 0, p_random: float = 0.3,
                   sigma: float = 0.3, record_infos: bool = False, algorithm_name: str = "target policy + noise",
                   description: str = "", rebuild: bool = False):
    """Record ``size`` transitions of a noisy behaviour around the target ``policy`` into the Minari
    dataset ``dataset_id`` with Minari's own ``DataCollector``, as a user records theirs: at every
    step ``policy(s) + N(0, (sigma a_max)^2)``, a uniform random action instead w.p. ``p_random``,
    clipped to the action bounds. Episode k starts from reset seed ``SeedSequence((seed, k))``
    (Minari draws a fresh random one when none is given): the same seed, the same dataset. An
    existing dataset is returned as it is, unless ``rebuild``."""
    if dataset_id in minari.list_local_datasets():
        if not rebuild:
            return minari.load_dataset(dataset_id)
        minari.delete_dataset(dataset_id)
    space = env.action_space
    check_box_spaces(dataset_id, env.observation_space, space)
    scale = (sigma * np.maximum(np.abs(space.low), np.abs(space.high))).astype(np.float32)   # (da,)
    collector = minari.DataCollector(env, record_infos=record_infos)
    rng = np.random.default_rng(seed)
    episode = itertools.count()

    def reset():   # episode k's reset seed from (seed, k)
        return collector.reset(seed=int(np.random.SeedSequence((seed, next(episode))).generate_state(1)[0]))[0]

    obs = reset()
    for _ in tqdm(range(size), desc=f"record {dataset_id}", unit="step", leave=False):
        a = np.asarray(policy(obs[None]), np.float32)[0] + scale * rng.standard_normal(len(scale)).astype(np.float32)
        if rng.uniform() < p_random:
            a = rng.uniform(space.low, space.high, len(scale)).astype(np.float32)
        obs, _, term, trunc, _ = collector.step(np.clip(a, space.low, space.high))
        if term or trunc:
            obs = reset()
    return collector.create_dataset(
        dataset_id=dataset_id, eval_env=env.spec.id, algorithm_name=algorithm_name,
        description=f"{env.spec.id}, behaviour = {algorithm_name}: N(0, {sigma}^2 a_max^2) on every action, "
                    f"uniform random w.p. {p_random}; {size} transitions. {description}".strip(),
        author="resolvent", author_email="resolvent@users.noreply.github.com",
        code_permalink="https://pypi.org/project/resolvent/")


def check_box_spaces(name: str, obs_space, action_space) -> None:
    """One clear error for a dataset whose observations or actions are not flat Box arrays."""
    for what, space in (("observations", obs_space), ("actions", action_space)):
        if space is not None and not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
            raise ValueError(f"{name}: resolvent needs flat (Box) observations and actions; the dataset's "
                             f"{what} are {space}")


def check_env_matches(env_id: str, name: str, obs_dim: int, action_dim: int) -> None:
    """The environment for ground truth must have the dataset's observation and action sizes."""
    env = make_env(env_id)
    try:
        obs, act = env.observation_space, env.action_space
        check_box_spaces(env_id, obs, act)
        if obs.shape != (obs_dim,) or act.shape != (action_dim,):
            raise ValueError(f"the environment {env_id} has observations {obs.shape} and actions {act.shape}, "
                             f"but the dataset {name} has ({obs_dim},) and ({action_dim},): give the "
                             f"environment it was recorded in (--env), or --env none")
    finally:
        env.close()


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
    except ValueError as e:
        raise ValueError(f"the {what}'s module: {e}") from None
    except Exception as e:  # noqa: BLE001 - the user's module: a SyntaxError, or its own code raising
        raise ValueError(f"cannot import the {what}'s module {mod_name!r}: {type(e).__name__}: {e}") from None
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
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - the user's file: a SyntaxError, or its own code raising
        raise ValueError(f"cannot run {str(path)!r}: {type(e).__name__}: {e}") from None
    return module


def load_probes(path: str | Path) -> dict[str, Callable]:
    """``PROBES = {name: callable}`` from a Python file."""
    try:
        module = load_module_file(path)
    except (FileNotFoundError, ValueError) as e:
        raise ValueError(f"probe rewards: {e}") from None
    probes = getattr(module, "PROBES", None)
    if not isinstance(probes, dict) or not all(callable(v) for v in probes.values()):
        raise ValueError(f"{path} must define PROBES = {{name: callable}}, a dict of reward callables")
    return dict(probes)


def named_rewards(rewards, what: str) -> list[tuple[str, Callable]]:
    """``{name: reward callable}`` as a list, or one clear error naming what is not a reward."""
    if rewards is None:
        return []
    if not hasattr(rewards, "items"):
        raise ValueError(f"{what} must be a dict {{name: reward callable}}, got {type(rewards).__name__}")
    for k, v in rewards.items():
        if not isinstance(k, str) or not callable(v):
            raise ValueError(f"{what}: {k!r} -> {type(v).__name__} is not a reward; give "
                             f"{{name (str): callable features -> (n,) values}}")
    return list(rewards.items())


def checked_policy(policy: Policy, obs: np.ndarray, action_dim: int, low=None, high=None,
                   name: str | None = None) -> Policy:
    """``policy`` as ``(n, ds) -> (n, da)`` float32, checked on dataset observations first and
    then at every call (next actions, fingerprint, ground-truth rollouts): an exception, the
    wrong shape or a NaN get one clear error naming the policy."""
    if not callable(policy):
        raise ValueError(f"the policy must be a callable obs (n, ds) -> actions (n, da), got {type(policy).__name__}")
    who = f"the policy {name!r}" if name else f"the policy {getattr(policy, '__qualname__', type(policy).__name__)!r}"

    def act(o, where: str = "observations"):
        o = np.asarray(o, np.float32)
        try:
            a = np.asarray(policy(o), np.float32)
        except Exception as e:  # noqa: BLE001 - the user's code: report what it got and what failed
            raise ValueError(f"{who} failed on {where} of shape {o.shape}: {type(e).__name__}: {e}") from None
        if a.shape != (len(o), action_dim):
            raise ValueError(f"{who} returned actions of shape {a.shape} for {where} of shape "
                             f"{o.shape}; the dataset's actions have shape (n, {action_dim})")
        if not np.all(np.isfinite(a)):
            bad = ~np.isfinite(a).all(1)
            raise ValueError(f"{who} returned non-finite actions (NaN or inf) on {where} of shape {o.shape} "
                             f"({int(bad.sum())} rows), e.g. at {o[np.argmax(bad)].tolist()}")
        return a

    act(obs[: min(len(obs), 64)], "the dataset's observations")
    if low is not None and high is not None:
        return lambda o: np.clip(act(o), low, high)
    return act
