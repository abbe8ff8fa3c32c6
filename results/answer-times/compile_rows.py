"""From how many rows a new reward along a rollout is worth compiling (``probes.COMPILE_ROWS``):
a new reward's first evaluation along a 400-step rollout (``Expansion.step_rewards``, in its
chunks), as written (one JAX operation at a time) against compiled (its tracing and compiling
included), side by side in one process, at the sizes the answers meet on Pendulum-Angle: the
bank's 400 steps x 6144 kept rollouts (2.5e6 states) and G_400 at 1e4 points (400 x 5 x 1e4 =
2e7 states); the family's reward at a new theta0 and every probe of the family. Median of 3
first calls, each of a new reward object.

    python results/answer-times/compile_rows.py > results/answer-times/compile-rows.txt
"""
from __future__ import annotations

import statistics
import time

import jax.numpy as jnp
import numpy as np

from resolvent.algorithms.expansion import Expansion
from resolvent.families import get_family
from resolvent.families.pendulum import pendulum_angle_reward
from resolvent.rewards import probes

STEPS = 400
SIZES = {"the bank, 400 x 6144": 6144, "G_400 at 1e4 points, 400 x 5e4": 50_000}


def rollout(rows: int, rng: np.random.Generator) -> Expansion:
    """A 400-step rollout of ``rows`` rows of random Pendulum states (what step_rewards reads)."""
    states = rng.standard_normal((STEPS + 1, rows, 3)).astype(np.float32)
    steps = {"obs": states[:-1], "next_obs": states[1:], "action": rng.standard_normal((STEPS, rows, 1), np.float32)}
    return Expansion(steps, np.ones((STEPS + 1, rows), np.float32), states[-1], steps["action"][-1],
                     np.zeros((STEPS + 1, 1, rows)), 0)


def first_call_ms(ex: Expansion, reward, compiled: bool) -> float:
    """A new reward's first evaluation along ``ex`` (median of 3, each a new object), compiled or not."""
    keep, times = probes.COMPILE_ROWS, []
    probes.COMPILE_ROWS = 1 if compiled else 1 << 62
    try:
        for _ in range(3):
            fresh = lambda f, r=reward: r(f)  # noqa: E731 - a new object: nothing cached for it
            ex.last[0] = None
            t0 = time.perf_counter()
            ex.step_rewards(fresh, "rollout")
            times.append(time.perf_counter() - t0)
    finally:
        probes.COMPILE_ROWS = keep
    return 1e3 * statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    rewards = {"family, theta0 = 1.261": lambda g: pendulum_angle_reward(jnp.float32(1.261), g),
               **get_family("pendulum-angle").probe_rewards()}
    print(f"{'reward':24s} {'states':>8s} {'as written ms':>14s} {'compiled ms':>12s}")
    for size, rows in SIZES.items():
        ex = rollout(rows, rng)
        for name, reward in rewards.items():
            print(f"{name:24s} {STEPS * rows:8.1e} {first_call_ms(ex, reward, False):14.0f} "
                  f"{first_call_ms(ex, reward, True):12.0f}", flush=True)
        del ex


if __name__ == "__main__":
    main()
