"""A new reward's answer at points already rolled out, call after call, after the rollout is made
again (fb+k400, seed 0, the benchmark's 1e4 state-actions; each reward a new member of the family,
``transitions.Member``): the first calls after a rollout are slower than the later ones.

    python results/answer-times/rolled_series.py runs/main-job-21 [ROUNDS] [CALLS]

Each round times the rollout (3 calls, as ``benchmarks/zero_shot.py`` does before ``rolled_ms``),
then CALLS answers one after another, in milliseconds.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

import resolvent
from resolvent.algorithms.expansion import expand
from resolvent.experiments import open_run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from zero_shot import new, seed0, warm_ms  # noqa: E402


def main() -> None:
    run = sys.argv[1]
    rounds, calls = (int(a) for a in (sys.argv[2:4] + ["3", "12"][len(sys.argv[2:4]):]))
    _, p = open_run(run)
    _, reward = p.source.rewards["test"][0]
    idx = np.random.default_rng(0).choice(len(p.features["obs"]), 10_000, replace=False)
    obs, act = p.features["obs"][idx], p.features["action"][idx]
    model = seed0(resolvent.load(run, "fb+k400"))
    model.q_values(reward, obs, act, horizon=400)
    enc = model.encode([reward])
    print(f"fb's forward pass alone at the points: {warm_ms(lambda: model.q_from_encodings(enc, obs, act), 9):.1f} ms")
    for _ in range(rounds):
        warm_ms(lambda: expand(model.onestep, model.target_policy, obs, act, 400), 3)
        ms = []
        for _ in range(calls):
            t0 = time.perf_counter()
            model.q_values(new(reward), obs, act, horizon=400)
            ms.append(1e3 * (time.perf_counter() - t0))
        print(f"after a rollout: {' '.join(f'{t:.1f}' for t in ms)}   median of the first 5 "
              f"{statistics.median(ms[:5]):.1f}, of the rest {statistics.median(ms[5:]):.1f}")


if __name__ == "__main__":
    main()
