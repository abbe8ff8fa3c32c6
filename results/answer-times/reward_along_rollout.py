"""A further reward along a kept rollout, the code before this session's change against after it,
side by side in one process: k = 400 steps of E n = 5 x 1e4 rows (2e7 model states), the
Pendulum-Angle family's reward (it reads obs and action).

    python results/answer-times/reward_along_rollout.py > results/answer-times/reward-along-rollout.txt

before: the k step dicts concatenated per reward, every quantity converted to JAX, every suffix's
discounted sum (a reversed cumsum) for the one G_k needs. after: the steps stacked once (views),
only the quantities the reward reads converted (``rewards.probes.Columns``), G_k's one sum by
einsum. Also JAX's arctan2 against numpy's on the same 2e7 values, the reward's own largest cost.
"""
from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.families.pendulum import pendulum_angle_reward
from resolvent.rewards.probes import Columns

K, ROWS, GAMMA = 400, 50_000, 0.99


def reward(f):
    return pendulum_angle_reward(jnp.float32(0.3), f)


def main() -> None:
    rng = np.random.default_rng(0)
    steps = [{"obs": rng.standard_normal((ROWS, 3), np.float32), "action": rng.standard_normal((ROWS, 1), np.float32),
              "next_obs": rng.standard_normal((ROWS, 3), np.float32),
              "reward": rng.standard_normal(ROWS).astype(np.float32), "terminated": np.zeros(ROWS, np.float32)}
             for _ in range(K)]
    alive = np.ones((K + 1, ROWS), np.float32)
    stacked = {key: np.stack([x[key] for x in steps]) for key in steps[0]}            # (K, E n, ...)

    def before():
        batch = {key: np.concatenate([x[key] for x in steps]) for key in steps[0]}
        v = jnp.asarray(reward({k: jnp.asarray(x) for k, x in batch.items()}), jnp.float32)
        assert bool(jnp.all(jnp.isfinite(v)))
        r = np.asarray(jax.device_get(v), np.float64).reshape(K, -1)
        return np.cumsum(((GAMMA ** np.arange(K))[:, None] * alive[:K] * r)[::-1], 0)[::-1][0]

    def after():
        batch = {key: v.reshape(-1, *v.shape[2:]) for key, v in stacked.items()}
        v = jnp.asarray(reward(Columns(batch)), jnp.float32)
        assert bool(jnp.all(jnp.isfinite(v)))
        r = np.asarray(jax.device_get(v)).reshape(K, -1)
        return np.einsum("u,un,un->n", GAMMA ** np.arange(K), alive[:K], r)

    a, b = before(), after()
    print(f"answers: max abs difference {np.abs(a - b).max():.2g} (largest answer {np.abs(a).max():.4g})")
    for _ in range(3):
        t0 = time.perf_counter()
        before()
        t1 = time.perf_counter()
        after()
        t2 = time.perf_counter()
        print(f"before {1e3 * (t1 - t0):.0f} ms, after {1e3 * (t2 - t1):.0f} ms")
    o = stacked["obs"].reshape(-1, 3)
    t0 = time.perf_counter()
    np.arctan2(o[:, 1], o[:, 0])
    t1 = time.perf_counter()
    jnp.arctan2(jnp.asarray(o[:, 1]), jnp.asarray(o[:, 0])).block_until_ready()
    t2 = time.perf_counter()
    print(f"arctan2 on {len(o):.0e} values: numpy {1e3 * (t1 - t0):.0f} ms, JAX {1e3 * (t2 - t1):.0f} ms")


if __name__ == "__main__":
    main()
