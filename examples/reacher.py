"""A dataset of one's own, end to end, on an environment that is not one of the paper's.

Reacher-v5 (MuJoCo: a two-link arm moving its fingertip to a random target) with a scripted
target policy: a Jacobian-transpose controller with damping, deterministic. ``python
examples/reacher.py`` records its offline dataset with Minari's own ``DataCollector``
(behaviour: the controller with Gaussian noise, a uniformly random action 30% of the time;
20,000 transitions), as any user would record theirs; then

    resolvent evaluate --data examples/reacher-jt-v0 --policy examples/reacher.py:policy \\
        --probes examples/reacher_probes.py --methods attention,fqe --seeds 1 --steps 10000

learns the operator on the dataset's own reward and the generic reward prior, and scores it
against Monte-Carlo truth on that reward and on the probe rewards, which read the quantities
Reacher stores in its infos (``reward_dist``, ``reward_ctrl``) as well as obs and action.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

DATASET_ID = "examples/reacher-jt-v0"
ENV_ID = "Reacher-v5"
GAIN, DAMPING = 20.0, 0.1      # the controller's stiffness and joint-velocity damping


def policy(observations: np.ndarray) -> np.ndarray:
    """The target policy, torque = -GAIN J(q)^T (fingertip - target) - DAMPING qdot: (n, 10) -> (n, 2)."""
    obs = np.asarray(observations, np.float32)
    q1, q2 = np.arctan2(obs[:, 2], obs[:, 0]), np.arctan2(obs[:, 3], obs[:, 1])
    s1, s12, c1, c12 = np.sin(q1), np.sin(q1 + q2), np.cos(q1), np.cos(q1 + q2)
    ex, ey = obs[:, 8], obs[:, 9]                                        # fingertip - target
    jt = np.stack([(-0.1 * s1 - 0.11 * s12) * ex + (0.1 * c1 + 0.11 * c12) * ey,
                   -0.11 * s12 * ex + 0.11 * c12 * ey], axis=1)           # J^T e, (n, 2)
    return np.clip(-GAIN * jt - DAMPING * obs[:, 6:8], -1.0, 1.0).astype(np.float32)


class InfoAtReset(gym.Wrapper):
    """Minari records infos only when reset and step give the same keys: Reacher's step info
    (``reward_dist``, ``reward_ctrl``) is given at reset too, as zeros."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, {"reward_dist": 0.0, "reward_ctrl": 0.0, **info}


def build(size: int = 20_000, seed: int = 0, p_random: float = 0.3, sigma: float = 0.3, rebuild: bool = False):
    """Record the behaviour's transitions into the Minari dataset ``DATASET_ID``."""
    from resolvent.data.user import record_dataset   # here: loading this file for its ``policy`` stays light

    return record_dataset(InfoAtReset(gym.make(ENV_ID)), policy, DATASET_ID, size, seed, p_random, sigma,
                          record_infos=True, algorithm_name="Jacobian-transpose controller + noise", rebuild=rebuild)


if __name__ == "__main__":
    ds = build(rebuild=True)
    print(f"{DATASET_ID}: {ds.total_steps} transitions in {ds.total_episodes} episodes")
