"""A dataset of one's own, end to end, on an environment that is not one of the paper's.

MountainCarContinuous-v0 with a scripted target policy: push along the velocity (bang-bang
energy pumping, deterministic). ``python examples/mountaincar.py`` records its offline dataset
with Minari's own ``DataCollector`` (behaviour: the policy with Gaussian noise, and a uniformly
random action 30% of the time, 20,000 transitions), as any user would record theirs; then

    resolvent evaluate --data examples/mountaincar-pump-v0 --policy examples/mountaincar.py:policy \\
        --probes examples/mountaincar_probes.py

learns the operator and scores it against Monte-Carlo truth on the dataset's own reward and
the probe rewards.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

DATASET_ID = "examples/mountaincar-pump-v0"
ENV_ID = "MountainCarContinuous-v0"


def policy(observations: np.ndarray) -> np.ndarray:
    """The target policy: full force in the direction of motion (n, 2) -> (n, 1)."""
    v = np.asarray(observations, np.float32)[:, 1:2]
    return np.where(v >= 0.0, 1.0, -1.0).astype(np.float32)


def build(size: int = 20_000, seed: int = 0, p_random: float = 0.3, sigma: float = 0.3, rebuild: bool = False):
    """Record the behaviour's transitions into the Minari dataset ``DATASET_ID``."""
    import minari

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
        dataset_id=DATASET_ID, eval_env=ENV_ID, algorithm_name="scripted energy pumping + noise",
        description=f"MountainCarContinuous-v0, behaviour = the pumping policy + N(0, {sigma}^2), "
                    f"uniform random w.p. {p_random}; {size} transitions",
        author="resolvent", author_email="resolvent@users.noreply.github.com",
        code_permalink="https://pypi.org/project/resolvent/")


if __name__ == "__main__":
    ds = build(rebuild=True)
    print(f"{DATASET_ID}: {ds.total_steps} transitions in {ds.total_episodes} episodes")
