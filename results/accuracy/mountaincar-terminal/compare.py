"""MountainCar's targets with and without the environment's termination rule, from two runs' saved
predictions: the own reward's MSE (and over the FQE oracle's) and every probe's R^2, per kind of
points, for one answer of each run.

    python results/accuracy/mountaincar-terminal/compare.py \\
        [--without results/accuracy/mountaincar-data] [--with results/accuracy/mountaincar-terminal] \\
        [--method fb+k400]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
KINDS = ("reset", "trajectory", "dataset")


def r2(pred: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(R,) R^2 of each row's answers over the points."""
    return 1.0 - ((pred - truth) ** 2).mean(-1) / truth.var(-1)


def scores(run: Path, method: str) -> dict:
    """kind -> (own reward MSE, FQE's, probe R^2 (P,)) of ``method`` in ``run``'s predictions.npz."""
    with np.load(run / "predictions.npz") as z:
        out = {}
        for kind in KINDS:
            mse = lambda m: float(((z[f"{m}|train|{kind}|pred"] - z[f"{m}|train|{kind}|truth"]) ** 2).mean())  # noqa: E731
            probes = r2(z[f"{method}|probe|{kind}|pred"], z[f"{method}|probe|{kind}|truth"])
            out[kind] = (mse(method), mse("fqe"), probes)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--without", type=Path, default=HERE.parent / "mountaincar-data")
    ap.add_argument("--with", dest="with_", type=Path, default=HERE)
    ap.add_argument("--method", default="fb+k400")
    args = ap.parse_args()
    probes = json.loads((args.with_ / "results.json").read_text())["probes"]
    runs = {"the model's flag, regressed on (s, a)": args.without, "the environment's rule (--terminal)": args.with_}
    print(f"{args.method}: own reward MSE (over the FQE oracle's), every probe's R^2 and their mean\n")
    print("| termination | points | own reward MSE | over FQE's | " + " | ".join(probes) + " | probe mean |")
    print("|---|---|---|---|" + "---|" * (len(probes) + 1))
    for name, run in runs.items():
        for kind, (own, fqe, pr) in scores(run, args.method).items():
            print(f"| {name} | {kind} | {own:.3g} | {own / fqe:.2f}x | " + " | ".join(f"{v:.2f}" for v in pr)
                  + f" | **{pr.mean():.2f}** |")


if __name__ == "__main__":
    main()
