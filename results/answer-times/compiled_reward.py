"""A reward over a long rollout, as written (one JAX operation at a time, the code before this
change) against compiled (``rewards.probes.evaluate_reward`` from ``COMPILE_ROWS`` rows), side by
side in one process: 400 steps x 5 members x 1e4 points = 2e7 model states, the Pendulum-Angle
family's reward at a new theta0 and every probe of the family. "first" is a new reward's first
call (tracing and compiling included), "again" a second call.

    python results/answer-times/compiled_reward.py > results/answer-times/compiled-reward.txt
"""
from __future__ import annotations

import time

import jax.numpy as jnp
import numpy as np

from resolvent.families import get_family
from resolvent.families.pendulum import pendulum_angle_reward
from resolvent.rewards.probes import Columns, evaluate_reward

ROWS = 400 * 5 * 10_000


def ms(fn) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    v = np.asarray(fn())
    return 1e3 * (time.perf_counter() - t0), v


def main() -> None:
    rng = np.random.default_rng(0)
    f = {"obs": rng.standard_normal((ROWS, 3), np.float32), "action": rng.standard_normal((ROWS, 1), np.float32),
         "next_obs": rng.standard_normal((ROWS, 3), np.float32)}
    rewards = {"family, theta0 = 1.261": lambda g: pendulum_angle_reward(jnp.float32(1.261), g),
               **get_family("pendulum-angle").probe_rewards()}
    print(f"{'reward':24s} {'as written ms':>14s} {'compiled first':>15s} {'again':>8s} {'max |diff|':>11s}")
    for name, reward in rewards.items():
        before, want = ms(lambda: jnp.asarray(reward(Columns(f)), jnp.float32))
        first, got = ms(lambda: evaluate_reward(reward, f, "rows"))
        again, _ = ms(lambda: evaluate_reward(reward, f, "rows"))
        print(f"{name:24s} {before:14.0f} {first:15.0f} {again:8.0f} {np.abs(want - got).max():11.2g}")


if __name__ == "__main__":
    main()
