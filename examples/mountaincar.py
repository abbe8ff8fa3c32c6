"""A terminating dataset with a sparse goal reward, end to end: MountainCarContinuous-v0.

The car must rock back and forth to climb the right hill; the environment pays +100 on reaching
the goal (position >= 0.45, where the episode terminates) and -0.1 a^2 per step. The target
policy pumps energy: full throttle in the direction of motion, deterministic. ``python
examples/mountaincar.py`` records the offline dataset with Minari's own ``DataCollector``
(behaviour: the policy with Gaussian noise, a uniformly random action 30% of the time; 20,000
transitions), then

    resolvent evaluate --data examples/mountaincar-pump-v0 --policy examples/mountaincar.py:policy \\
        --probes examples/mountaincar_probes.py --seeds 1 --steps 10000

learns the operators on the dataset's own (sparse, terminating) reward and the generic reward
prior, and scores them against Monte-Carlo truth on that reward and on the probes. The one-step
model's rollouts end by the environment's termination rule, which ``resolvent/endings.py`` knows
for MountainCarContinuous-v0 (``--terminal auto``, the default); ``terminal`` below is the same
rule written as a user would write one for an environment it does not know (``--terminal
examples/mountaincar.py:terminal``). With the flag learned from (s, a) instead (``--terminal
none``) the goal probe is paid about twice (results/accuracy/mountaincar-data/).
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

DATASET_ID = "examples/mountaincar-pump-v0"
ENV_ID = "MountainCarContinuous-v0"


def policy(observations: np.ndarray) -> np.ndarray:
    """The target policy, a = sign(velocity) (a = 1 at rest): (n, 2) -> (n, 1)."""
    obs = np.asarray(observations, np.float32)
    return np.where(obs[:, 1:2] >= 0.0, 1.0, -1.0).astype(np.float32)


def terminal(transition) -> np.ndarray:
    """The environment's termination rule: the next position reaches the goal (0.45) at a velocity
    >= 0; 1 there, else 0 (n,)."""
    nxt = transition["next_obs"]
    return ((nxt[:, 0] >= 0.45) & (nxt[:, 1] >= 0.0)).astype("float32")


def build(size: int = 20_000, seed: int = 0, p_random: float = 0.3, sigma: float = 0.3, rebuild: bool = False):
    """Record the behaviour's transitions into the Minari dataset ``DATASET_ID``."""
    from resolvent.data.user import record_dataset   # here: loading this file for its ``policy`` stays light

    return record_dataset(gym.make(ENV_ID), policy, DATASET_ID, size, seed, p_random, sigma, record_infos=False,
                          algorithm_name="energy pumping + noise", rebuild=rebuild)


if __name__ == "__main__":
    ds = build(rebuild=True)
    print(f"{DATASET_ID}: {ds.total_steps} transitions in {ds.total_episodes} episodes")
