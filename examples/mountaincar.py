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
prior, and scores them against Monte-Carlo truth on that reward and on the probes.
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


def build(size: int = 20_000, seed: int = 0, p_random: float = 0.3, sigma: float = 0.3, rebuild: bool = False):
    """Record the behaviour's transitions into the Minari dataset ``DATASET_ID``."""
    import minari   # here, not at the top: loading this file for its ``policy`` stays light

    if DATASET_ID in minari.list_local_datasets():
        if not rebuild:
            return minari.load_dataset(DATASET_ID)
        minari.delete_dataset(DATASET_ID)
    env = minari.DataCollector(gym.make(ENV_ID))
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(size):
        a = policy(obs[None])[0] + sigma * rng.standard_normal(1).astype(np.float32)
        if rng.uniform() < p_random:
            a = rng.uniform(-1.0, 1.0, 1).astype(np.float32)
        obs, _, term, trunc, _ = env.step(np.clip(a, -1.0, 1.0))
        if term or trunc:
            obs, _ = env.reset()
    return env.create_dataset(
        dataset_id=DATASET_ID, eval_env=ENV_ID, algorithm_name="energy pumping + noise",
        description=f"MountainCarContinuous-v0, behaviour = sign(velocity) + N(0, {sigma}^2), "
                    f"uniform random w.p. {p_random}; {size} transitions",
        author="resolvent", author_email="resolvent@users.noreply.github.com",
        code_permalink="https://pypi.org/project/resolvent/")


if __name__ == "__main__":
    ds = build(rebuild=True)
    print(f"{DATASET_ID}: {ds.total_steps} transitions in {ds.total_episodes} episodes")
