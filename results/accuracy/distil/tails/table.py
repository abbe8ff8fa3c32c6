"""The expansion with the distilled student as its tail (``METHOD+dK+kk``) against the teacher's
own expansions, from a finished run's predictions: test MSE and R^2, probe mean R^2 and the worst
probe, at each kind of points (mean over network seeds of each reward's R^2 over the points).

    python results/accuracy/distil/tails/table.py RUN [--methods favor] > table.txt
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

KINDS = ("reset", "trajectory", "dataset")


def r2_each(pred: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each reward's R^2 over the points, mean over seeds: pred (S, R, n) or (R, n) (predictions.npz
    holds the mean over seeds), truth (R, n) -> (R,)."""
    err = ((pred.reshape(-1, *truth.shape) - truth) ** 2).sum(-1)          # (S, R)
    return (1 - err / ((truth - truth.mean(-1, keepdims=True)) ** 2).sum(-1)).mean(0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--methods", default="favor")
    args = ap.parse_args()
    z = np.load(args.run / "predictions.npz")
    names = json.loads((args.run / "results.json").read_text())["methods"]
    print("method | " + " | ".join(f"{k}: test MSE, test R^2, probe mean R^2 (worst)" for k in KINDS))
    for base in args.methods.split(","):
        for name in (m for m in names if m == base or m.startswith(base + "+")):
            cells = []
            for kind in KINDS:
                test = z[f"{name}|test|{kind}|pred"], z[f"{name}|test|{kind}|truth"]
                probe = r2_each(z[f"{name}|probe|{kind}|pred"], z[f"{name}|probe|{kind}|truth"])
                cells.append(f"{np.mean((test[0] - test[1]) ** 2):.3g}, {r2_each(*test).mean():.3f}, "
                             f"{probe.mean():.3f} ({probe.min():.2f})")
            print(f"{name} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
