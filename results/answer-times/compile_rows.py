"""From how many rows a new reward along a rollout is worth compiling (``probes.COMPILE_ROWS``):
a new reward's first evaluation along a 400-step rollout (``Expansion.step_rewards``, in its
chunks), as written (one JAX operation at a time) against compiled (its tracing and compiling
included), side by side in one process, at the sizes the answers meet on Pendulum-Angle: the
bank's 400 steps x 6144 kept rollouts (2.5e6 states) and G_400 at 1e4 points (400 x 5 x 1e4 =
2e7 states); the family's reward at a new theta0 and every probe of the family. Median of 3
first calls, each of a new reward object. The states are random; with ``--run`` (the README's
main job) also along that run's own bank (``--bank 2048`` states rolled out as
``benchmarks/zero_shot.py`` builds it), for the family's reward, median of 9.

    python results/answer-times/compile_rows.py --run runs/main-job-7 > results/answer-times/compile-rows.txt
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import jax.numpy as jnp
import numpy as np

import resolvent
from resolvent.algorithms.bank import Bank, bank_starts
from resolvent.algorithms.expansion import Expansion
from resolvent.experiments import EvaluateConfig, RunDir, prepare
from resolvent.families import get_family
from resolvent.families.pendulum import pendulum_angle_reward
from resolvent.keys import name_id
from resolvent.rewards import probes

STEPS = 400
SIZES = {"the bank, 400 x 6144": 6144, "G_400 at 1e4 points, 400 x 5e4": 50_000}


def rollout(rows: int, rng: np.random.Generator) -> Expansion:
    """A 400-step rollout of ``rows`` rows of random Pendulum states (what step_rewards reads)."""
    states = rng.standard_normal((STEPS + 1, rows, 3)).astype(np.float32)
    steps = {"obs": states[:-1], "next_obs": states[1:], "action": rng.standard_normal((STEPS, rows, 1), np.float32)}
    return Expansion(steps, np.ones((STEPS + 1, rows), np.float32), states[-1], steps["action"][-1],
                     np.zeros((STEPS + 1, 1, rows)), 0)


def first_call_ms(ex: Expansion, reward, compiled: bool, repeats: int = 3) -> float:
    """A new reward's first evaluation along ``ex`` (median of ``repeats``, each a new object),
    compiled or not."""
    keep, times = probes.COMPILE_ROWS, []
    probes.COMPILE_ROWS = 1 if compiled else 1 << 62
    try:
        for _ in range(repeats):
            fresh = lambda f, r=reward: r(f)  # noqa: E731 - a new object: nothing cached for it
            ex.last[0] = None
            t0 = time.perf_counter()
            ex.step_rewards(fresh, "rollout")
            times.append(time.perf_counter() - t0)
    finally:
        probes.COMPILE_ROWS = keep
    return 1e3 * statistics.median(times)


def run_bank(run: str, points: int) -> Expansion:
    """The kept members' 400-step rollouts of ``run``'s bank from ``points`` of its states (favor's
    one-step model and the run's pi), as the benchmark builds it."""
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    p = prepare(dataclasses.replace(cfg, seeds=1, n_test_rewards=1, methods=("fqe",), eval_points=("reset",),
                                    trust="off"))
    bank_cfg = dataclasses.replace(cfg.bank, points=points)
    model = resolvent.load(run, "favor+k30")
    starts = bank_starts(p.features, bank_cfg, name_id(f"{cfg.seed}-bank"))
    return Bank(bank_cfg, starts).build(model.onestep, model.target_policy).rollout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=None, help="also along this run's own bank (the README's main job)")
    ap.add_argument("--bank", type=int, default=2048, help="the bank's starting states")
    args = ap.parse_args()
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
    if args.run:
        ex, family = run_bank(args.run, args.bank), rewards["family, theta0 = 1.261"]
        rows = ex.alive.shape[1] * ex.horizon
        print(f"\nalong {args.run}'s bank ({ex.horizon} x {ex.alive.shape[1]} kept rollouts, median of 9):")
        print(f"{'family, theta0 = 1.261':24s} {rows:8.1e} {first_call_ms(ex, family, False, 9):14.0f} "
              f"{first_call_ms(ex, family, True, 9):12.0f}")


if __name__ == "__main__":
    main()
