"""The expansion with a point's cycle closed (``OneStepConfig.close``, the default) and not, on a
finished run's operators and points: every operator's G_k at each of the run's horizons, both
ways, from one rollout, scored as the run scores (test MSE and probe R^2 at the reset,
trajectory and dataset points, means over network seeds), and the share of the kept members'
rows that repeat a cycle before step k (closed, where ``close`` is on).

    python results/accuracy/closure/closure.py RUN [--methods favor,fb] [--horizons 60,150,400] > NAME.txt
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from resolvent.experiments import open_run
from resolvent.experiments.evaluate import horizon_answers
from resolvent.experiments.scoring import score

COLUMNS = ("test_mse", "traj_test_mse", "data_test_mse", "probe_r2", "traj_probe_r2", "data_probe_r2")


def finished_run(ap: argparse.ArgumentParser):
    """A study of a finished run's expansions: RUN, ``--methods`` and ``--horizons`` added to ``ap``
    (beside its own options), the run opened and its points' line printed. Returns (args, run
    directory, its config, its problem, (obs, act) of its points, methods, horizons)."""
    ap.add_argument("run")
    ap.add_argument("--methods", default=None, help="the run's operators to score (default: all)")
    ap.add_argument("--horizons", default=None, help="k, comma-separated (default: the run's)")
    args = ap.parse_args()
    run = Path(args.run)
    cfg, p = open_run(run)
    obs, act = p.raw_points()
    methods = args.methods.split(",") if args.methods else [m for m in cfg.methods if m != "fqe"]
    horizons = [int(k) for k in args.horizons.split(",")] if args.horizons else list(cfg.horizons)
    print(f"{run.name}: {cfg.family} {cfg.dataset}, {len(obs)} points, seeds {cfg.seeds}")
    return args, run, cfg, p, (obs, act), methods, horizons


def cells(answers, p) -> str:
    """The answers' ``COLUMNS`` as the run scores them (means over network seeds), a table's cells."""
    s = score(answers, p)
    return " | ".join(f"{np.mean(s[c]):.4g}" if c in s else "-" for c in COLUMNS)


def main() -> None:
    args, run, cfg, p, (obs, act), methods, horizons = finished_run(
        argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    print("| answer | close | rows closed | " + " | ".join(COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    for method in methods:
        model = p.expansion_model(run / "models", method)
        own = model.onestep
        for close in (False, True):
            model.onestep = own._replace(close=close)
            answers = horizon_answers(model, p, obs, act, horizons)
            for k in sorted(horizons):
                ex = model.expansion(obs, act, k)
                closed = 0.0 if ex.repeats is None else float(np.mean(ex.repeats.first[ex.kept] < k))
                print(f"| {method}+k{k} | {'on' if close else 'off'} | {closed:.2f} | {cells(answers[k], p)} |",
                      flush=True)
        model.onestep = own


if __name__ == "__main__":
    main()
