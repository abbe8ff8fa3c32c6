"""``calibrate`` end to end on a finished run (a family's, or a dataset's whose simulator can be
set to a state): its own answers and simulator rollouts, each reward set's MSE against the run's
Monte-Carlo truth, beside auto's pick and the best candidate.

    python results/accuracy/few-rollouts/end_to_end.py RUN [--m 8] [--kinds dataset trajectory reset]

For each kind of points and reward set (the family's test rewards, or a dataset run's own
reward, and the probes): ``calibrate``
at the run's evaluation points of that kind; the set's MSE by its per-reward choice, by auto's
pick (``trust.choose_method``, runs with the trust report) and by every single candidate, over
the best candidate's; the seconds it took (every candidate's answers, then the rollouts).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from resolvent.experiments.calibrate import calibrate, run_candidates
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.sources import answered_rewards, config_source
from resolvent.experiments.trust import choose_method


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--m", type=int, default=8)
    ap.add_argument("--kinds", nargs="+", default=["dataset", "trajectory", "reset"])
    args = ap.parse_args()
    run = RunDir(args.run)
    cfg = EvaluateConfig.from_dict(run.read_config())
    src = config_source(cfg)
    sets = answered_rewards(src)
    candidates = run_candidates(args.run)
    try:
        auto = choose_method(run.read_results()["methods"], candidates, cfg.auto_tie)["chosen"]
    except ValueError:                                         # no trust report
        auto = None
    print(f"{args.run} ({cfg.family or cfg.data} {cfg.dataset}), m = {args.m}, {len(candidates)} candidates, "
          f"auto: {auto}\n")
    print("| points | rewards | best candidate | calibrate | auto | seconds | chosen |\n|---|---|---|---|---|---|---|")
    for kind in args.kinds:
        gt = src.points[kind]
        for name, named in sets.items():
            rewards = {f"{i}: {n}": r for i, (n, r) in enumerate(named)}   # names may repeat
            t0 = time.perf_counter()
            c = calibrate(args.run, rewards, gt.obs0, gt.action0, m=args.m, candidates=candidates)
            seconds = time.perf_counter() - t0
            truth = np.stack([gt.q(r) for r in rewards.values()])                   # (R, n)
            each = ((c.answers - truth[None]) ** 2).mean((1, 2))                    # (C,) each candidate's set MSE
            best = int(np.argmin(each))
            ratio = ((c.q - truth) ** 2).mean() / each[best]
            auto_ratio = "-" if auto is None else f"{each[candidates.index(auto)] / each[best]:.2f}"
            counts = {m: c.chosen.count(m) for m in dict.fromkeys(c.chosen)}
            print(f"| {kind} | {name} ({len(rewards)}) | {candidates[best]} | {ratio:.2f} | {auto_ratio} | "
                  f"{seconds:.0f} | {', '.join(f'{m} x{k}' for m, k in counts.items())} |", flush=True)


if __name__ == "__main__":
    main()
