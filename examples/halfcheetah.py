"""A noisy HalfCheetah dataset of one's own, recorded the way a user would record theirs.

HalfCheetah-v5 driven by the shipped HalfCheetah-Vel target policy (TD3, trained to run at 1 m/s)
with Gaussian noise on every action and a uniformly random action 30% of the time, recorded
with Minari's own ``DataCollector`` (100,000 transitions, infos kept). ``python
examples/halfcheetah.py`` builds it; then

    resolvent evaluate --data examples/halfcheetah-noisy-v0 --policy examples/halfcheetah.py:policy \\
        --probes examples/halfcheetah_probes.py --methods favor,fb,sf,attention,fqe \\
        --oracle-rewards probe --seeds 1 --steps 15000

learns the operators on the dataset's own reward and the generic prior, and scores the zero-shot
Q of the probe rewards (the dataset's own reward, action effort, other speeds, postures, rates
of change) against Monte-Carlo truth at states of the dataset (HalfCheetah's state is set from
an observation), at points along the target's trajectories and at reset, next to a per-reward
FQE trained on each probe alone.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from resolvent.policies.actor import load_target_policy

DATASET_ID = "examples/halfcheetah-noisy-v0"
ENV_ID = "HalfCheetah-v5"
INFO_KEYS = ("x_velocity", "reward_forward", "reward_ctrl")   # x_position is left out: a restored
#                                                               state has x = 0, so it is not a state quantity
ACTOR = load_target_policy("halfcheetah-vel")


def policy(observations: np.ndarray) -> np.ndarray:
    """The target policy, the shipped HalfCheetah-Vel actor: (n, 17) -> (n, 6)."""
    return ACTOR(observations)


class StepInfos(gym.Wrapper):
    """Minari records infos only when reset and step give the same keys: the step's velocity and
    reward terms, zeros at reset; ``x_position`` dropped."""

    def reset(self, **kwargs):
        obs, _ = self.env.reset(**kwargs)
        return obs, {k: 0.0 for k in INFO_KEYS}

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        return obs, reward, term, trunc, {k: float(info[k]) for k in INFO_KEYS}


def build(size: int = 100_000, seed: int = 0, p_random: float = 0.3, sigma: float = 0.3,
          rebuild: bool = False):
    """Record the behaviour's transitions into the Minari dataset ``DATASET_ID``."""
    from resolvent.data.user import record_dataset   # here: loading this file for its ``policy`` stays light

    return record_dataset(StepInfos(gym.make(ENV_ID)), policy, DATASET_ID, size, seed, p_random, sigma,
                          record_infos=True, algorithm_name="HalfCheetah-Vel TD3 target + noise", rebuild=rebuild)


if __name__ == "__main__":
    ds = build(rebuild=True)
    print(f"{DATASET_ID}: {ds.total_steps} transitions in {ds.total_episodes} episodes")
