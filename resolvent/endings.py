"""The termination rules of known environments: where an episode ends, read from a transition.

A rule is ``terminal(transition) -> (n,)``, 1 where the transition ends its episode and 0 where it
goes on, reading the transition's ``obs``, ``action`` and ``next_obs`` (n, ...), as a reward reads
it. The one-step model of a terminating dataset ends its rollouts by it (``algorithms/onestep.py``,
``split``); one registry, keyed by Gymnasium environment id, holds Gymnasium's own conditions with
the environments' default arguments, on the next observation (the MuJoCo ones as observed without
the positions on the ground, the default):

- MountainCarContinuous-v0: the position reaches the goal, 0.45, at a velocity >= 0;
- InvertedPendulum-v5: the pole's angle leaves [-0.2, 0.2] (or a value is not finite);
- Hopper-v5: the torso's height at or below 0.7, its angle outside (-0.2, 0.2), or any other
  joint position or velocity outside (-100, 100) (observed velocities are clipped to +-10);
- Walker2d-v5: the height outside (0.8, 2.0), or the angle outside (-1, 1);
- Ant-v5: the torso's height outside [0.2, 1.0] (or a value is not finite).

A rule is used only where a dataset's own ``terminated`` flag agrees with it on every transition
(``experiments/sources.py``), so an environment made with other arguments falls back to the
model's learned flag, with a warning.
"""
from __future__ import annotations

from typing import Callable, Mapping

import jax.numpy as jnp

Terminal = Callable[[Mapping], object]


def _ends(ok) -> jnp.ndarray:
    """1.0 where not ``ok``, else 0.0 (n,)."""
    return jnp.where(ok, 0.0, 1.0).astype(jnp.float32)


def mountaincar(transition: Mapping) -> jnp.ndarray:
    """MountainCarContinuous-v0: next (position, velocity) past the goal, moving right."""
    nxt = jnp.asarray(transition["next_obs"])
    return 1.0 - _ends((nxt[:, 0] >= 0.45) & (nxt[:, 1] >= 0.0))


def inverted_pendulum(transition: Mapping) -> jnp.ndarray:
    """InvertedPendulum-v5: the next observation's angle (its second entry) beyond 0.2."""
    nxt = jnp.asarray(transition["next_obs"])
    return _ends(jnp.isfinite(nxt).all(-1) & (jnp.abs(nxt[:, 1]) <= 0.2))


def hopper(transition: Mapping) -> jnp.ndarray:
    """Hopper-v5: next (z, angle, joints, velocities); healthy where 0.7 < z, -0.2 < angle < 0.2
    and every entry after z within (-100, 100)."""
    nxt = jnp.asarray(transition["next_obs"])
    rest = (nxt[:, 1:] > -100.0) & (nxt[:, 1:] < 100.0)
    return _ends((nxt[:, 0] > 0.7) & (nxt[:, 1] > -0.2) & (nxt[:, 1] < 0.2) & rest.all(-1))


def walker2d(transition: Mapping) -> jnp.ndarray:
    """Walker2d-v5: next (z, angle, ...); healthy where 0.8 < z < 2 and -1 < angle < 1."""
    nxt = jnp.asarray(transition["next_obs"])
    return _ends((nxt[:, 0] > 0.8) & (nxt[:, 0] < 2.0) & (nxt[:, 1] > -1.0) & (nxt[:, 1] < 1.0))


def ant(transition: Mapping) -> jnp.ndarray:
    """Ant-v5: next (z, ...); healthy where 0.2 <= z <= 1 and every entry is finite."""
    nxt = jnp.asarray(transition["next_obs"])
    return _ends(jnp.isfinite(nxt).all(-1) & (nxt[:, 0] >= 0.2) & (nxt[:, 0] <= 1.0))


TERMINALS: dict[str, Terminal] = {
    "MountainCarContinuous-v0": mountaincar,
    "InvertedPendulum-v5": inverted_pendulum,
    "Hopper-v5": hopper,
    "Walker2d-v5": walker2d,
    "Ant-v5": ant,
}


def terminal_for(env_id: str | None) -> Terminal | None:
    """The registered rule of ``env_id`` (None: none known)."""
    return TERMINALS.get(env_id) if env_id is not None else None


def rule_name(rule: Terminal) -> str:
    """A registered rule's MODULE:ATTR (what a saved model names it by)."""
    return f"{__name__}:{rule.__name__}"
