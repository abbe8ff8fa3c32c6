"""A new reward's answer at points already rolled out, the reward run as written (one JAX
operation at a time, before this change) against compiled (``rewards.probes.COMPILE_ROWS``), side
by side in one process over a run's models: fb+k400 (the reward at 400 steps x 5 members x 1e4
points) and fb+kauto (the horizon's choice first, then G_k at it), median of 3 calls each. Then
kauto's members' sums at its candidate horizons, from the same reward values: the (k, E n)
cumsum of the discounted rewards (before) against ``Expansion.sums_at`` (after).

    python results/answer-times/rolled_compiled.py --run RUN > results/answer-times/rolled-compiled.txt
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import jax
import numpy as np

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import prepare
from resolvent.rewards import probes


def seed0(model):
    return dataclasses.replace(model, params=jax.tree_util.tree_map(lambda a: a[:1], model.params))


def benchmark_problem(run: str):
    """The run's problem as ``benchmarks/zero_shot.py`` prepares it: one test reward, its truth at
    the reset points."""
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    return prepare(dataclasses.replace(cfg, seeds=1, n_test_rewards=1, methods=("fqe",), eval_points=("reset",),
                                       trust="off"))


def points_of(p, pairs: int):
    """The problem's first test reward (name, callable) and ``pairs`` of its dataset's
    state-actions, the benchmark's."""
    idx = np.random.default_rng(0).choice(len(p.x), min(pairs, len(p.x)), replace=False)
    return p.source.rewards["test"][0], p.features["obs"][idx], p.features["action"][idx]


def reward_and_points(run: str, pairs: int):
    """The run's first test reward (name, callable) and ``pairs`` of its dataset's state-actions."""
    return points_of(benchmark_problem(run), pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--pairs", type=int, default=10_000)
    args = ap.parse_args()
    (name, reward), obs, act = reward_and_points(args.run, args.pairs)
    compiled_from = probes.COMPILE_ROWS
    print(f"run {args.run}, reward {name}, {len(obs)} points; ms per answer, median of 3 (as written | compiled)")
    for method in ("fb+k400", "fb+kauto"):
        model = seed0(resolvent.load(args.run, method))
        model.q_values(reward, obs, act)                                    # the rollout, kept
        answers, times = {}, {"as written": [], "compiled": []}
        for _ in range(3):
            for how, rows in (("as written", 1 << 62), ("compiled", compiled_from)):
                probes.COMPILE_ROWS = rows
                fresh = lambda f: reward(f)                                 # noqa: E731 - a new reward each time
                t0 = time.perf_counter()
                answers[how] = np.asarray(model.q_values(fresh, obs, act))
                times[how].append(1e3 * (time.perf_counter() - t0))
        probes.COMPILE_ROWS = compiled_from
        diff = np.abs(answers["as written"] - answers["compiled"]).max()
        before, after = (statistics.median(times[how]) for how in ("as written", "compiled"))
        print(f"{method:10s} {before:8.0f} | {after:8.0f}"
              f"   max |answer difference| {diff:.2g} (largest answer {np.abs(answers['compiled']).max():.4g})")
    steps = [k for k in model.horizons if k]
    exp = model.expansion(obs, act, max(steps))
    exp.step_rewards(reward, "rollout")                                     # kept: only the sums are timed
    times = {"cumsum": [], "sums_at": []}
    for _ in range(3):
        t0 = time.perf_counter()
        old = np.cumsum(exp.discounted_rewards(reward, model.gamma, "rollout"), 0)[[k - 1 for k in steps]]
        t1 = time.perf_counter()
        new = exp.sums_at(reward, model.gamma, "rollout", steps)
        t2 = time.perf_counter()
        times["cumsum"].append(1e3 * (t1 - t0))
        times["sums_at"].append(1e3 * (t2 - t1))
    print(f"kauto's sums at k = {steps}: cumsum {statistics.median(times['cumsum']):.0f} ms | sums_at "
          f"{statistics.median(times['sums_at']):.0f} ms   max |difference| {np.abs(old - new).max():.2g}")


if __name__ == "__main__":
    main()
