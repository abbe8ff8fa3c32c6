"""Set a simulator to an observation: what measures the truth at a dataset's own states.

The Monte-Carlo truth at a dataset's states (``evaluation/points.py``'s ``dataset`` points) and
``calibrate``'s rollouts start pi from a state of the data, so the simulator must be set to it.
One registry, keyed by Gymnasium environment id, holds how: ``restore(env, obs)`` sets ``env``
(made by ``gym.make(env_id)`` and reset) to the state whose observation is ``obs`` (ds,).

- MuJoCo locomotion (HalfCheetah, Hopper, Walker2d, Swimmer, Ant, InvertedPendulum): the
  observation is qpos without its first ``skip`` entries (the position on the ground, which no
  reward of the observation reads, set to 0), then qvel (Hopper and Walker2d clip it to +-10 in
  the observation: a faster state comes back clipped); Ant's contact forces after them follow
  from the state.
- Reacher: the joint angles from their cosines and sines, the target's position, the joints'
  velocities (the target does not move); the fingertip follows (Reacher observes it at the last
  substep's start, so a restored observation's last two entries differ by about 1e-6).
- Pendulum: (cos theta, sin theta, thdot); MountainCarContinuous: (position, velocity).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

Restore = Callable[[object, np.ndarray], None]


def mujoco(skip: int) -> Restore:
    """The restore of a MuJoCo environment observing (qpos[skip:], qvel, ...): qpos[:skip] = 0
    (skip = 0 where the environment was made to observe every position)."""
    def restore(env, obs: np.ndarray) -> None:
        sim = env.unwrapped
        k = skip if getattr(sim, "_exclude_current_positions_from_observation", True) else 0
        nq, nv = sim.model.nq, sim.model.nv
        sim.set_state(np.concatenate([np.zeros(k), obs[:nq - k]]), np.asarray(obs[nq - k:nq - k + nv], np.float64))
    restore.__doc__ = f"Set the simulator from an observation (qpos[{skip}:], qvel, ...); qpos[:{skip}] = 0."
    return restore


def restore_reacher(env, obs: np.ndarray) -> None:
    """Reacher-v5: obs = (cos q, sin q, target xy, qdot, fingertip - target xy), q the two joints."""
    sim = env.unwrapped
    q = np.arctan2(obs[2:4], obs[0:2])                                   # (2,)
    sim.set_state(np.concatenate([q, obs[4:6]]), np.concatenate([obs[6:8], np.zeros(sim.model.nv - 2)]))


def restore_pendulum(env, obs: np.ndarray) -> None:
    """Pendulum-v1: state (theta, thdot) from the observation (cos theta, sin theta, thdot)."""
    env.unwrapped.state = np.array([np.arctan2(obs[1], obs[0]), obs[2]], np.float64)


def restore_mountaincar(env, obs: np.ndarray) -> None:
    """MountainCarContinuous-v0: the observation is the state (position, velocity)."""
    env.unwrapped.state = np.array(obs[:2], np.float32)


RESTORES: dict[str, Restore] = {
    "Pendulum-v1": restore_pendulum,
    "MountainCarContinuous-v0": restore_mountaincar,
    "Reacher-v5": restore_reacher,
    "InvertedPendulum-v5": mujoco(0),
    "HalfCheetah-v5": mujoco(1),
    "Hopper-v5": mujoco(1),
    "Walker2d-v5": mujoco(1),
    "Swimmer-v5": mujoco(2),
    "Ant-v5": mujoco(2),
}


def restore_for(env_id: str | None) -> Restore | None:
    """The ``restore(env, obs)`` of ``env_id`` (None: no known way)."""
    return RESTORES.get(env_id) if env_id is not None else None


def unknown_restore(env_id: str | None) -> str:
    """One sentence for a dataset whose simulator cannot be set to its states."""
    return (f"no known way to set {env_id or 'this dataset'!r}'s simulator to an observation "
            f"(known: {sorted(RESTORES)})")
