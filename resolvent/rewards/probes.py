"""Out-of-family probe rewards: how well an operator answers rewards nobody trained it on.

Each family has at least six, of different kinds (a region indicator, a quadratic of one
state dimension, action effort, a height or a velocity, products and mixtures, and the rate of
change of a state quantity, read from ``next_obs``: its Q is decided by the first steps'
transient), written like any user reward: a callable over the stored transition quantities
returning (n,) values.
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

Reward = Callable[[Mapping[str, jax.Array]], jax.Array]


def _angle(f):
    return jnp.arctan2(f["obs"][:, 1], f["obs"][:, 0])


def _effort(f):
    return -jnp.sum(f["action"] ** 2, axis=-1)


PENDULUM = {
    "upright-region": lambda f: (f["obs"][:, 0] > 0.9).astype(jnp.float32),        # indicator
    "height": lambda f: f["obs"][:, 0],                                              # cos theta
    "velocity-sq": lambda f: -f["obs"][:, 2] ** 2,                                   # quadratic
    "effort": _effort,                                                               # action
    "power": lambda f: f["obs"][:, 2] * jnp.clip(f["action"][:, 0], -2, 2),         # product
    "side-bump": lambda f: jnp.exp(-((_angle(f) - 1.0) ** 2) / 0.2),                 # local bump
    "mixture": lambda f: 0.5 * f["obs"][:, 0] - 0.1 * jnp.abs(f["obs"][:, 2]) + 0.2 * f["obs"][:, 1],
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],                  # rate of change
    "angle-rate": lambda f: (jnp.arctan2(f["next_obs"][:, 1], f["next_obs"][:, 0]) - _angle(f) + jnp.pi)
    % (2 * jnp.pi) - jnp.pi,                                                         # the step's turn
}

HALFCHEETAH = {
    "speed-band": lambda f: ((f["x_velocity"] > 0.5) & (f["x_velocity"] < 1.5)).astype(jnp.float32),
    "forward-velocity": lambda f: f["x_velocity"],
    "pitch-sq": lambda f: -f["obs"][:, 1] ** 2,                                      # quadratic
    "effort": _effort,
    "height": lambda f: f["obs"][:, 0],                                              # root z
    "velocity-x-height": lambda f: f["x_velocity"] * f["obs"][:, 0],                 # product
    "run-fast": lambda f: f["x_velocity"] + 0.1 * _effort(f),                       # HalfCheetah-v5's own
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],                  # rate of change
    "pitch-rate": lambda f: f["next_obs"][:, 1] - f["obs"][:, 1],
}

ANT = {
    "upright-region": lambda f: (f["obs"][:, 0] > 0.55).astype(jnp.float32),       # torso height band
    "height": lambda f: f["obs"][:, 0],
    "lateral-speed-sq": lambda f: -f["y_velocity"] ** 2,                              # quadratic
    "effort": _effort,
    "speed": lambda f: jnp.sqrt(f["x_velocity"] ** 2 + f["y_velocity"] ** 2),
    "yaw-rate-x-velocity": lambda f: f["obs"][:, 18] * f["x_velocity"],             # product
    "mixture": lambda f: f["y_velocity"] - 0.5 * f["obs"][:, 0] + 0.25 * _effort(f),
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],                  # rate of change
}

PROBES: dict[str, dict[str, Reward]] = {
    "pendulum-angle": PENDULUM, "halfcheetah-vel": HALFCHEETAH, "ant-dir": ANT}


def probe_rewards(family: str) -> dict[str, Reward]:
    """The probe rewards of a family (name -> callable); {} for an unknown one."""
    return dict(PROBES.get(family, {}))


def evaluate_reward(reward: Reward, features: Mapping, what: str, name: str = "reward callable") -> jax.Array:
    """``reward(features)`` checked to be finite with one value per transition: (n,)."""
    n = len(next(iter(features.values())))
    try:
        values = jnp.asarray(reward({k: jnp.asarray(v) for k, v in features.items()}), jnp.float32)
    except KeyError as e:
        raise ValueError(f"{name} asked for {e}, which the {what} do not store; "
                         f"available: {sorted(features)}") from None
    except Exception as e:  # noqa: BLE001 - the user's code: name it and what it raised
        raise ValueError(f"{name} failed on the {what}: {type(e).__name__}: {e}") from None
    if values.shape != (n,):
        raise ValueError(f"{name} returned shape {tuple(values.shape)} on {n} {what}; "
                         f"expected ({n},), one value per transition")
    if not bool(jnp.all(jnp.isfinite(values))):
        unknown = sorted(k for k, v in features.items()
                         if np.issubdtype(np.asarray(v).dtype, np.floating) and np.isnan(np.asarray(v)).any())
        hint = (f" (at some of them {unknown} are unknown, NaN: those points carry the target policy's "
                f"action, so a reward may read only {sorted(set(features) - set(unknown))})") if unknown else ""
        raise ValueError(f"{name} returned non-finite values on the {what}{hint}")
    return values


class _Reads(dict):
    """A features dict that records which keys a reward reads."""

    def __init__(self, features):
        super().__init__(features)
        self.read: set = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def reads(reward: Reward, features: Mapping) -> set:
    """The keys of ``features`` that ``reward`` reads (all of them if it fails on two rows)."""
    probe = _Reads({k: jnp.asarray(np.asarray(v)[:2]) for k, v in features.items()})
    try:
        reward(probe)
    except Exception:  # noqa: BLE001 - evaluate_reward reports the reward's own error where it is used
        return set(features)
    return probe.read
