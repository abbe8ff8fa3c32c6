"""The data of the ``policy`` encoding: rewards scored under the target policy.

Every method whose network has the ``policy`` encoding (``operators.NETWORKS``) reads a reward
at the data's next states with the target policy's action, x'_pi = (s', pi(s')), whose next
quantities (next_obs, the stored reward, info entries, terminated) come from a one-step model
of the data (``algorithms.onestep``), and at the query's own first step (s, a), the same way.
``PolicyRefs`` holds, once per experiment: the fitted one-step model, the transition quantities
at every x'_pi, the pi-scored values of every reward set there, the reward inputs of the
generic prior there, and the reference pool (up to ``ref_pool`` of those points) that the
scores and the saved inference models encode rewards over.
"""
from __future__ import annotations

import hashlib
import json
import warnings
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import flax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from resolvent.algorithms import onestep
from resolvent.io import atomic_savez
from resolvent.keys import named_key
from resolvent.operators import networks
from resolvent.paths import cache_dir
from resolvent.rewards import reward_inputs
from resolvent.rewards.probes import evaluate_reward

WHAT = {"train": "training reward", "test": "test reward", "probe": "probe reward", "heldout": "held-out reward"}


@dataclass
class PolicyRefs:
    """Rewards scored under pi, for the methods of the ``policy`` encoding."""

    model: onestep.OneStepModel   # the one-step model of the data
    features: dict                # (n rows) transition quantities at x'_pi = (s', pi(s'))
    pool: np.ndarray              # (N,) indices of the reference pool among the n points
    values: dict                  # set -> (R, n) train / (R, N) other sets: pi-scored reward values
    z: np.ndarray                 # (n, dz) raw reward inputs at x'_pi (generic prior)
    live: np.ndarray              # (N,) bool: the pool's transitions that did not terminate

    def pool_for(self, kernel: bool) -> np.ndarray:
        """Positions in the pool a method encodes over: a kernel measure (favor, pi-attention) only
        the next states of non-terminal transitions (it was trained on those); fb all (its measure
        is relative to every next state, and learns none on terminal ones)."""
        return np.flatnonzero(self.live) if kernel else np.arange(len(self.pool))

    def pool_features(self, kernel: bool) -> dict:
        return {k: v[self.pool[self.pool_for(kernel)]] for k, v in self.features.items()}


def predict_features(model: onestep.OneStepModel, obs, action, chunk: int = 50_000) -> dict:
    """The one-step model's transition quantities at (obs, action), as numpy, in chunks."""
    parts = [onestep.predict(model, obs[i:i + chunk], action[i:i + chunk]) for i in range(0, len(obs), chunk)]
    return {k: np.concatenate([np.asarray(p[k]) for p in parts]) for k in parts[0]}


def fit_data_model(config: onestep.OneStepConfig, seed: int, features: dict, x_mean: np.ndarray,
                   x_std: np.ndarray, terminal: onestep.Terminal | None = None) -> onestep.OneStepModel:
    """The experiment's one-step model of the data, its key derived from the seed (a refit with
    the same config and seed gives the run's own model); with the environment's ``terminal``
    rule, fitted split and the rule attached (a warning where it disagrees with the data's flag).
    Fitted once: the model is kept in ``$RESOLVENT_HOME/onestep/`` under a hash of everything the
    fit reads (the data, the input normalisation, the config, the seed, whether split and the
    fitting code), so a resumed run, a rerun or a benchmark over the run loads it instead of
    fitting it again. A warning where its noisy rollout would move a dimension past
    ``onestep.NOISE_REACH`` of its spread each step (``onestep.noise_reach``)."""
    split = terminal is not None
    if split:
        onestep.ends(features)     # the data can tell what an ending pays, before any fitting
        wrong, n = onestep.rule_disagreement(terminal, features)
        if wrong:
            warnings.warn(f"the termination rule disagrees with the dataset's `terminated` flag on {wrong} of {n} "
                          f"transitions: the model learns what an ending pays from the flag, and ends its "
                          f"rollouts by the rule", stacklevel=2)
    path = cache_dir("onestep") / f"{fit_tag(config, seed, features, x_mean, x_std, split)}.npz"
    model = cached_model(path)
    if model is None:
        model = onestep.fit(config, named_key(seed, "onestep"), features, x_mean, x_std, split)
        atomic_savez(path, **onestep.to_arrays(model))
    model = model._replace(terminal=terminal, cycle=config.cycle, close=config.close, noise=config.noise,
                           copies=config.copies, noise_cap=config.noise_cap)
    reach = onestep.noise_reach(model)
    if reach:
        warnings.warn(reach, stacklevel=2)
    return model


ROLLOUT_ONLY = ("cycle", "close", "noise", "copies", "noise_cap")   # the OneStepConfig fields rollouts read


def fit_tag(config: onestep.OneStepConfig, seed: int, features: dict, x_mean: np.ndarray, x_std: np.ndarray,
            split: bool = False) -> str:
    """sha256 of what ``onestep.fit`` reads, the source of the code that fits (its module and the
    MLP's) and the versions of the libraries it runs on (its first 20 hex digits)."""
    h = hashlib.sha256(Path(onestep.__file__).read_bytes() + Path(networks.__file__).read_bytes())
    h.update(f"jax {jax.__version__} flax {flax.__version__} optax {optax.__version__}".encode())
    fitting = {k: v for k, v in asdict(config).items() if k not in ROLLOUT_ONLY}   # not the fit's
    h.update(json.dumps([fitting, seed] + ([True] if split else []), sort_keys=True).encode())
    for name in sorted(features):
        v = np.ascontiguousarray(features[name])
        h.update(f"{name}{v.dtype}{v.shape}".encode())
        h.update(v.tobytes())
    for v in (x_mean, x_std):
        h.update(np.ascontiguousarray(v, np.float64).tobytes())
    return h.hexdigest()[:20]


def cached_model(path: Path) -> onestep.OneStepModel | None:
    """The model saved at ``path``; None where there is none or it cannot be read (it is then fitted again)."""
    if not path.is_file():
        return None
    try:
        with np.load(path) as z:
            return onestep.from_arrays({k: z[k] for k in z.files})
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None


def policy_refs(features: dict, next_actions: np.ndarray, done: np.ndarray, x_mean: np.ndarray, x_std: np.ndarray,
                rewards: dict, extras: tuple[str, ...], config: onestep.OneStepConfig, ref_pool: int,
                seed: int, terminal: onestep.Terminal | None = None) -> PolicyRefs:
    """Fit the one-step model, score every reward set at x'_pi; ``rewards``: set -> [(name, callable)],
    ``done`` (n,) the data's terminations, ``terminal`` the environment's rule where given."""
    model = fit_data_model(config, seed, features, x_mean, x_std, terminal)
    pi = predict_features(model, np.asarray(features["next_obs"], np.float32), np.asarray(next_actions, np.float32))
    n = len(next_actions)
    pool = np.sort(np.random.default_rng(seed + 2).choice(n, min(n, ref_pool), replace=False))
    pool_feats = {k: v[pool] for k, v in pi.items()}
    values = {}
    for s, named in rewards.items():
        where, feats = ("all", pi) if s == "train" else ("pool", pool_feats)
        rows = len(next(iter(feats.values())))
        values[s] = (jnp.stack([evaluate_reward(r, feats, f"target policy's points ({where})", f"{WHAT[s]} {k!r}")
                                for k, r in named]) if named else jnp.zeros((0, rows)))
    return PolicyRefs(model, pi, pool, values, reward_inputs(pi, extras), np.asarray(done)[pool] == 0)


def first_step_values(model: onestep.OneStepModel, rewards: list, obs, action, what: str) -> jax.Array:
    """Rewards (R, b) at the query points' own first step (s, a), its next quantities predicted."""
    feats = predict_features(model, np.asarray(obs, np.float32), np.asarray(action, np.float32))
    if not rewards:
        return jnp.zeros((0, len(obs)))
    return jnp.stack([evaluate_reward(r, feats, what, f"reward {k!r}") for k, r in rewards])
