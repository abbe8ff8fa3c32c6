"""Reward priors: which rewards an operator trains on.

The paper trains on its family alone (``family``): 32 members, all fed at every step. An
operator that must answer *any* reward needs a prior that covers more. The ``generic`` prior
draws, at every step, fresh random rewards over the stored transition quantities; ``mix``
feeds both. A generic reward is a function of the *reward inputs* z, the observation, the
action and the family's scalar extras of a transition, normalised by the dataset's mean and
standard deviation (dimensions that are constant in the data are left out):

    fourier:  r(z) = sqrt(2) cos(omega . z_S + b),         omega_d ~ N(0, 1/l^2), b ~ U[0, 2 pi)
    bump:     r(z) = exp(-||z_S - c_S||^2 / (2 l^2)),       c = z of a random dataset transition

over a random subset S of 1..``max_dims`` dimensions, with a length-scale l drawn from
``lengthscales``: global waves and local region rewards, both of few quantities, like the
rewards people write. The fourier kind samples a Gaussian process with a sum of sparse RBF
kernels (random Fourier features, Rahimi & Recht 2007). Because the attention weights are
computed once per step and serve every reward, many rewards per step cost little.

The draw is a pure function of a PRNG key: deterministic for the run's seed, reproduced
exactly on ``--resume`` (the keys are checkpointed). ``PriorData`` (the normalisation and the
usable dimensions) is saved with the run; ``GenericReward`` turns drawn parameters into
ordinary reward callables over features, for inspection and tests.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.io import atomic_savez

PRIORS = ("family", "generic", "mix")


@dataclass(frozen=True)
class PriorConfig:
    """The reward prior an operator trains on."""

    kind: str = "mix"                  # family (the paper's), generic, or mix (both)
    n_generic: int = 256               # generic rewards drawn afresh at every step
    lengthscales: tuple[float, ...] = (0.5, 1.0, 2.0)  # in dataset standard deviations
    max_dims: int = 2                  # a generic reward reads 1..max_dims reward inputs
    bump_fraction: float = 0.5         # share of bump (local) rewards; the rest are fourier

    def __post_init__(self):
        if self.kind not in PRIORS:
            raise ValueError(f"unknown reward prior {self.kind!r}; known: {list(PRIORS)}")
        if self.n_generic < 1:
            raise ValueError(f"n_generic (generic rewards per step) must be >= 1, got {self.n_generic}")
        if not self.lengthscales or min(self.lengthscales) <= 0:
            raise ValueError(f"lengthscales must be positive, got {self.lengthscales}")
        if self.max_dims < 1:
            raise ValueError(f"max_dims must be >= 1, got {self.max_dims}")
        if not 0.0 <= self.bump_fraction <= 1.0:
            raise ValueError(f"bump_fraction must be in [0, 1], got {self.bump_fraction}")

    @property
    def generic(self) -> bool:
        return self.kind in ("generic", "mix")

    @property
    def family(self) -> bool:
        return self.kind in ("family", "mix")


def reward_inputs(features: Mapping[str, np.ndarray], extras: tuple[str, ...]) -> np.ndarray:
    """The quantities a generic reward reads: obs, action and scalar extras, (n, dz)."""
    cols = [np.asarray(features["obs"], np.float32), np.asarray(features["action"], np.float32)]
    cols += [np.asarray(features[k], np.float32)[:, None] for k in extras]
    return np.concatenate(cols, axis=-1)


class PriorData(NamedTuple):
    """What a generic draw needs on device: normalised reward inputs and usable dimensions."""

    z: jax.Array        # (n, dz) normalised reward inputs of the dataset
    z_xi: jax.Array     # (m, dz) the same at the reference points
    usable: jax.Array   # (dz,) 1.0 where the input varies in the data


class PriorStats(NamedTuple):
    """The normalisation of the reward inputs, saved with a run (``prior.npz``)."""

    mean: np.ndarray    # (dz,)
    std: np.ndarray     # (dz,)
    usable: np.ndarray  # (dz,) bool
    extras: tuple[str, ...]

    @classmethod
    def fit(cls, z_raw: np.ndarray, extras: tuple[str, ...]) -> "PriorStats":
        mean, std = z_raw.mean(0), z_raw.std(0)
        usable = std > 1e-3
        return cls(mean.astype(np.float32), np.where(usable, std, 1.0).astype(np.float32),
                   usable, tuple(extras))

    def normalise(self, z_raw) -> np.ndarray:
        return ((np.asarray(z_raw, np.float32) - self.mean) / self.std).astype(np.float32)

    def data(self, z_raw: np.ndarray, z_xi_raw: np.ndarray) -> PriorData:
        """The dataset's and the reference points' inputs, normalised; inputs unknown at a
        reference point (NaN: a point with the target policy's action) are unusable."""
        usable = self.usable & np.all(np.isfinite(z_xi_raw), axis=0)
        z_xi = np.nan_to_num(self.normalise(z_xi_raw))
        return PriorData(jnp.asarray(self.normalise(z_raw)), jnp.asarray(z_xi), jnp.asarray(usable, jnp.float32))

    def save(self, path: str | Path) -> None:
        atomic_savez(path, mean=self.mean, std=self.std, usable=self.usable, extras=np.array(self.extras, str))

    @classmethod
    def load(cls, path: str | Path) -> "PriorStats":
        with np.load(path) as z:
            return cls(z["mean"], z["std"], z["usable"].astype(bool), tuple(str(e) for e in z["extras"]))


class RewardParams(NamedTuple):
    """K drawn generic rewards."""

    mask: jax.Array      # (K, dz) 1.0 on the dimensions the reward reads
    omega: jax.Array     # (K, dz) frequencies (fourier) / 1/l (bump), zero off the mask
    phase: jax.Array     # (K,) fourier phase
    centre: jax.Array    # (K, dz) bump centre
    bump: jax.Array      # (K,) 1.0 for a bump, 0.0 for a fourier reward


def sample(config: PriorConfig, key: jax.Array, prior: PriorData, count: int) -> RewardParams:
    """``count`` generic rewards drawn from the prior (pure in ``key``)."""
    k_dims, k_n, k_scale, k_omega, k_phase, k_centre, k_kind = jax.random.split(key, 7)
    dz = prior.z.shape[1]
    n_dims = jax.random.randint(k_n, (count, 1), 1, config.max_dims + 1)            # (K, 1)
    scores = jnp.where(prior.usable > 0, jax.random.uniform(k_dims, (count, dz)), 2.0)  # (K, dz)
    rank = jnp.argsort(jnp.argsort(scores, axis=1), axis=1)                         # (K, dz)
    n_usable = jnp.maximum(jnp.sum(prior.usable), 1).astype(jnp.int32)
    mask = (rank < jnp.minimum(n_dims, n_usable)).astype(jnp.float32)              # (K, dz)
    scales = jnp.asarray(config.lengthscales, jnp.float32)
    ell = scales[jax.random.randint(k_scale, (count, 1), 0, len(scales))]          # (K, 1)
    bump = (jax.random.uniform(k_kind, (count,)) < config.bump_fraction).astype(jnp.float32)
    normal = jax.random.normal(k_omega, (count, dz))
    omega = mask * jnp.where(bump[:, None] > 0, 1.0, normal) / ell                 # (K, dz)
    phase = jax.random.uniform(k_phase, (count,), maxval=2 * jnp.pi)               # (K,)
    centre = prior.z[jax.random.randint(k_centre, (count,), 0, prior.z.shape[0])]  # (K, dz)
    return RewardParams(mask, omega, phase, centre, bump)


def values(params: RewardParams, z: jax.Array) -> jax.Array:
    """The drawn rewards at normalised inputs z (n, dz): (n, K)."""
    fourier = jnp.sqrt(2.0) * jnp.cos(z @ params.omega.T + params.phase)          # (n, K)
    w2 = params.omega ** 2                                                         # (K, dz)
    dist = (z ** 2) @ w2.T - 2 * z @ (w2 * params.centre).T + jnp.sum(w2 * params.centre ** 2, 1)
    bump = jnp.exp(-0.5 * jnp.maximum(dist, 0.0))                                  # (n, K)
    return jnp.where(params.bump > 0, bump, fourier)


def draw(config: PriorConfig, key: jax.Array, prior: PriorData, idx: jax.Array):
    """Fresh generic rewards for one step: their values on the batch ``idx`` (b, K) and at
    the reference points, their encodings (K, m)."""
    params = sample(config, key, prior, config.n_generic)
    return values(params, prior.z[idx]), values(params, prior.z_xi).T


@dataclass
class GenericReward:
    """One drawn generic reward as an ordinary reward callable over transition features."""

    stats: PriorStats
    params: RewardParams     # K = 1

    def __call__(self, features: Mapping[str, jax.Array]) -> jax.Array:
        z = jnp.asarray(self.stats.normalise(reward_inputs(features, self.stats.extras)))
        return values(self.params, z)[:, 0]


def generic_rewards(config: PriorConfig, key: jax.Array, stats: PriorStats, z_raw: np.ndarray,
                    count: int) -> list[GenericReward]:
    """``count`` generic rewards as callables (centres drawn from the transitions ``z_raw``)."""
    z = jnp.asarray(stats.normalise(z_raw))
    prior = PriorData(z, z, jnp.asarray(stats.usable, jnp.float32))
    p = sample(config, key, prior, count)
    return [GenericReward(stats, jax.tree_util.tree_map(lambda a, i=i: a[i:i + 1], p)) for i in range(count)]
