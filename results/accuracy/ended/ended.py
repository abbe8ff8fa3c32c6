"""A point whose every member's episode has ended stops rolling (``algorithms/expansion.py``'s
rollout: it repeats its last step, weighing nothing, and its members' distances stop growing),
scored on a finished run's operators and points as the run scores (test MSE and probe R^2 at the
reset, trajectory and dataset points, means over network seeds), with the model steps a point
takes at the longest horizon and the rollout's time, at the run's points and at 1e4 of the data's
state-actions (the benchmark's):

    python results/accuracy/ended/ended.py RUN [--methods fb] [--horizons 60,150,400] [--pairs N] > NAME.txt

Run on the code before the change (a checkout of it first on PYTHONPATH) for the other side.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from resolvent.algorithms.expansion import expand
from resolvent.experiments.evaluate import horizon_answers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "closure"))
from closure import COLUMNS, cells, finished_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10_000, help="the data's state-actions the rollout is timed at")
    args, run, cfg, p, (obs, act), methods, horizons = finished_run(ap)
    first = None
    for method in methods:
        model = p.expansion_model(run / "models", method)
        if first is None:
            own = model.onestep
            t0 = time.perf_counter()
            ex = expand(own, model.target_policy, obs, act, max(horizons))
            seconds = time.perf_counter() - t0
            e, n = own.members, len(obs)
            first = np.full(n, max(horizons)) if ex.repeats is None else ex.repeats.first.reshape(e, n)[0]
            ended = ex.alive[-1].reshape(e, n).max(0) == 0
            print(f"k = {max(horizons)}: {first.mean():.1f} model steps a point (median {np.median(first):.0f}), "
                  f"{ended.mean():.2f} of the points ended, the rollout {seconds:.2f} s (its first call)")
            idx = np.random.default_rng(0).choice(len(p.features["obs"]), min(args.pairs, len(p.features["obs"])),
                                                  replace=False)
            many = p.features["obs"][idx], p.features["action"][idx]
            expand(own, model.target_policy, *many, max(horizons))                      # compiled
            t0 = time.perf_counter()
            ex = expand(own, model.target_policy, *many, max(horizons))
            seconds = time.perf_counter() - t0
            many_first = np.full(len(idx), max(horizons)) if ex.repeats is None else ex.repeats.first[:len(idx)]
            print(f"at {len(idx)} of the data's state-actions: {many_first.mean():.1f} model steps a point, "
                  f"the rollout {seconds:.2f} s (warm)")
            print("| answer | " + " | ".join(COLUMNS) + " |")
            print("|---|" + "---|" * len(COLUMNS))
        answers = horizon_answers(model, p, obs, act, horizons)
        for k in sorted(horizons):
            print(f"| {method}+k{k} | {cells(answers[k], p)} |", flush=True)


if __name__ == "__main__":
    main()
