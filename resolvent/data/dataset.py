"""Offline datasets: building them (paper appendix, BCQ's protocol), Minari storage, loading.

Three kinds per family: ``replay`` (the TD3 run's replay buffer, shipped with the package),
``expert`` (behaviour = pi with p = 0.1) and ``medium`` (p = 0.3), at the paper's sizes. They
are stored as Minari datasets ``resolvent/<family>/<kind>-v0`` in Minari's root
(``$MINARI_DATASETS_PATH``, default ``~/.minari/datasets``), so ``minari.load_dataset`` reads
them; the family's extra quantities are in the episodes' ``infos``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium as gym
import jax.numpy as jnp
import minari
from minari.data_collector import EpisodeBuffer
from minari.storage.datasets_root_dir import get_dataset_path
import numpy as np

from resolvent.data.collect import behaviour_policy, collect_episodes, split_replay
from resolvent.families import RewardFamily
from resolvent.io import file_lock
from resolvent.policies import Actor, load_target_policy, shipped_path
from resolvent.policies.actor import TD3_NOISE, load_snapshots, policy_hash

KINDS = {"replay": None, "expert": 0.1, "medium": 0.3}   # kind -> random-action probability p

Transitions = dict  # obs, action, next_obs (n, d); terminated, truncated (n,) bool; extras (n,)


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown dataset kind {kind!r}; known: {sorted(KINDS)}")


def dataset_id(family: RewardFamily, kind: str, seed: int = 0) -> str:
    check_kind(kind)
    tag = kind if seed == 0 else f"{kind}-seed{seed}"
    return f"resolvent/{family.name}/{tag}-v0"


def build_episodes(family: RewardFamily, kind: str, actor: Actor, seed: int = 0,
                   size: int | None = None) -> list[dict]:
    """The episodes of one dataset kind, ``size`` transitions (default: the paper's)."""
    check_kind(kind)
    size = int(size or family.dataset_size)
    if kind == "replay" and family.replay_source == "buffer":
        path = shipped_path(family.name, "-replay.npz")
        if not Path(str(path)).is_file():
            raise FileNotFoundError(f"no shipped TD3 replay buffer for {family.name} at {path}; "
                                    f"run `resolvent target {family.name} --retrain`")
        with np.load(str(path)) as z:
            buffer = {k: z[k][-size:] for k in z.files}
        episodes = split_replay(buffer, family)
    elif kind == "replay":
        episodes = replay_from_snapshots(family, size, seed)
    else:
        space = gym.make(family.env_id).action_space
        rng = np.random.default_rng(seed)
        policy = behaviour_policy(actor, space, KINDS[kind], family.sigma, rng)
        episodes = collect_episodes(family, policy, size, seed, desc=f"{family.name} {kind}")
    for ep in episodes:  # the base task's own reward, for Minari users
        feats = episode_features(ep, family)
        ep["rewards"] = np.asarray(family.reward(jnp.float32(family.original_param), feats), np.float32)
    return episodes


def replay_from_snapshots(family: RewardFamily, size: int, seed: int = 0,
                          snapshots_path: str | Path | None = None) -> list[dict]:
    """The TD3 run's replay buffer, regenerated from actor snapshots along the run.

    A MuJoCo replay buffer is too large to ship, so the package ships the actor at the middle
    of each tenth of the TD3 run instead. Each tenth of the dataset is collected with its
    snapshot plus TD3's exploration noise, and the first tenth starts with as many uniformly
    random actions as TD3's warm-up took: the same mixture of policies as a uniform
    subsample of the TD3 replay buffer.
    """
    space = gym.make(family.env_id).action_space
    snaps = load_snapshots(family.name, space.low, space.high, snapshots_path)
    rng = np.random.default_rng(seed)
    k = len(snaps.actors)
    counts = [size // k + (i < size % k) for i in range(k)]
    n_random = int(round(counts[0] * min(1.0, snaps.learning_starts * k / snaps.steps)))
    counts[0] -= n_random
    parts = [(behaviour_policy(snaps.actors[0], space, 1.0, 0.0, rng), n_random, "warm-up")]
    parts += [(behaviour_policy(a, space, 0.0, TD3_NOISE, rng), c, f"snapshot {i}")
              for i, (a, c) in enumerate(zip(snaps.actors, counts))]
    episodes = []
    for j, (policy, n, name) in enumerate(parts):
        if n > 0:
            episodes += collect_episodes(family, policy, n, seed * 1_000 + j,
                                         desc=f"{family.name} replay ({name})")
    return episodes


def episode_features(ep: dict, family: RewardFamily) -> Transitions:
    obs = np.asarray(ep["observations"], np.float32)
    out = {"obs": obs[:-1], "action": np.asarray(ep["actions"], np.float32), "next_obs": obs[1:],
           "terminated": np.asarray(ep["terminations"], bool),
           "truncated": np.asarray(ep["truncations"], bool)}
    for k in family.extras:
        out[k] = np.asarray(ep["infos"][k], np.float32)[1:]
    return out


def save_minari(family: RewardFamily, kind: str, seed: int, episodes: list[dict], actor: Actor,
                dataset_name: str | None = None):
    env = gym.make(family.env_id)
    buffers = [EpisodeBuffer(id=i, observations=ep["observations"], actions=ep["actions"],
                             rewards=ep["rewards"], terminations=ep["terminations"],
                             truncations=ep["truncations"], infos=ep["infos"] or None)
               for i, ep in enumerate(episodes)]
    p = KINDS[kind]
    how = ("TD3 replay buffer" if p is None and family.replay_source == "buffer"
           else "TD3 replay buffer, regenerated from actor snapshots along the run" if p is None
           else f"behaviour = target policy, random action w.p. {p}, else N(0, ({family.sigma} a_max)^2)")
    return minari.create_dataset_from_buffers(
        dataset_id=dataset_name or dataset_id(family, kind, seed), buffer=buffers, env=env, eval_env=env,
        algorithm_name=f"resolvent target-policy {policy_hash(actor)}",
        description=(f"{family.name} offline dataset '{kind}' ({how}), seed {seed}; "
                     f"infos hold {list(family.extras)}"),
        author="resolvent", author_email="resolvent@users.noreply.github.com", code_permalink="https://pypi.org/project/resolvent/")


def load_transitions(family: RewardFamily, kind: str, seed: int = 0, actor: Actor | None = None,
                     rebuild: bool = False) -> Transitions:
    """The dataset as flat transition arrays, building (and storing) it if needed."""
    check_kind(kind)
    actor = actor if actor is not None else load_target_policy(family.name)
    did = dataset_id(family, kind, seed)
    wanted = f"resolvent target-policy {policy_hash(actor)}"
    with build_lock(did):   # runs side by side (a sweep, two CLIs) build a dataset once, never remove another's
        ds = _try_load(did)
        if ds is not None and (rebuild or ds.storage.metadata.get("algorithm_name") != wanted):
            minari.delete_dataset(did)
            ds = None
        if ds is None:
            episodes = build_episodes(family, kind, actor, seed)
            try:
                ds = save_minari(family, kind, seed, episodes, actor)
            except BaseException:
                _remove(did)  # never leave a half-written dataset behind (the lock makes it ours)
                raise
        try:
            return transitions_from_minari(ds, family)
        except (OSError, KeyError, RuntimeError, TypeError, IndexError) as e:   # h5py's errors
            raise ValueError(f"the stored dataset {did} is damaged ({type(e).__name__}: {e}); rebuild it with "
                             f"`resolvent dataset {family.name} --kind {kind} --seed {seed} --rebuild`") from None


def build_lock(did: str):
    """Dataset ``did``'s lock (a file beside its folder in Minari's root), held while checking,
    building or reading it: a second process on the same id (``resolvent dataset``, ``evaluate``,
    a sweep's workers) waits for the first and then loads what it built (``io.file_lock``)."""
    path = get_dataset_path(did)
    return file_lock(path.parent / f"{path.name}.lock", f"the dataset {did}")


def _remove(did: str) -> None:
    path = get_dataset_path(did)
    if path.exists():
        shutil.rmtree(path)


def _try_load(did: str):
    """The stored dataset, or None; a half-written one (no readable metadata) is removed."""
    if not get_dataset_path(did).exists():
        return None
    try:
        return minari.load_dataset(did)
    except Exception:  # noqa: BLE001 - unreadable: derived data, rebuilt from the package
        _remove(did)
        return None


def transitions_from_minari(ds, family: RewardFamily) -> Transitions:
    parts = []
    for ep in ds.iterate_episodes():
        parts.append(episode_features({"observations": ep.observations, "actions": ep.actions,
                                       "terminations": ep.terminations,
                                       "truncations": ep.truncations, "infos": ep.infos}, family))
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    validate_transitions(data, family, ds.observation_space.shape[0], ds.action_space.shape[0],
                         ds.action_space)
    return data


def validate_transitions(data: Transitions, family: RewardFamily, obs_dim: int, action_dim: int,
                         action_space=None) -> None:
    """Raise one ValueError naming the field that is missing, mis-shaped or not finite, or the
    first action outside ``action_space`` (a Box; 1% of its range is tolerated)."""
    need = {"obs": (obs_dim,), "action": (action_dim,), "next_obs": (obs_dim,),
            "terminated": (), "truncated": ()}
    need.update({k: () for k in family.extras})
    n = None
    for k, shape in need.items():
        if k not in data:
            raise ValueError(f"dataset lacks the field {k!r}")
        v = np.asarray(data[k])
        n = len(v) if n is None else n
        if v.shape != (n,) + shape:
            raise ValueError(f"dataset field {k!r} has shape {v.shape}, expected {(n,) + shape}")
        if v.dtype != bool and not np.all(np.isfinite(v)):
            bad = int(np.argwhere(~np.isfinite(v.reshape(n, -1)))[0, 0])
            raise ValueError(f"dataset field {k!r} has a non-finite value (NaN or inf) at transition {bad}")
    if n == 0:
        raise ValueError("dataset is empty")
    if action_space is not None:
        low, high = np.asarray(action_space.low, np.float32), np.asarray(action_space.high, np.float32)
        tol = 0.01 * (high - low)
        out = (data["action"] < low - tol) | (data["action"] > high + tol)           # (n, da)
        if out.any():
            i, j = np.argwhere(out)[0]
            raise ValueError(f"dataset action {float(data['action'][i, j]):.4g} (dimension {j}) at transition "
                             f"{i} is outside the action space [{low[j]:.4g}, {high[j]:.4g}]")


REFERENCE_SAMPLING = ("uniform", "cover")


def reference_indices(n: int, m: int, seed: int, sampling: str = "uniform",
                      x: np.ndarray | None = None, pool: int = 20_000) -> np.ndarray:
    """m reference points drawn once from n transitions.

    ``uniform``: without replacement, as the paper. ``cover``: half of them uniform, the other
    half by greedy farthest-point (k-center) selection over the normalised inputs ``x`` (n, dx)
    of a random pool of ``pool`` transitions, so that regions the data visit rarely still get
    reference points (a reward that lives there can then be seen by the operator).
    """
    if m > n:
        raise ValueError(f"m = {m} reference points but the dataset has only {n} transitions")
    if sampling not in REFERENCE_SAMPLING:
        raise ValueError(f"unknown reference sampling {sampling!r}; known: {list(REFERENCE_SAMPLING)}")
    rng = np.random.default_rng(seed)
    if sampling == "uniform":
        return np.sort(rng.choice(n, size=m, replace=False))
    if x is None or len(x) != n:
        raise ValueError("cover sampling needs the normalised inputs x of every transition")
    cand = rng.choice(n, size=min(n, max(pool, m)), replace=False)          # (c,)
    xc = np.asarray(x, np.float32)[cand]                                    # (c, dx)
    chosen = list(range(m // 2 or 1))                                      # cand is already random
    dist = np.full(len(xc), np.inf, np.float32)                             # (c,)
    for j in chosen:
        dist = np.minimum(dist, ((xc - xc[j]) ** 2).sum(-1))
    while len(chosen) < m:
        j = int(np.argmax(dist))
        chosen.append(j)
        dist = np.minimum(dist, ((xc - xc[j]) ** 2).sum(-1))
    return np.sort(cand[chosen])
