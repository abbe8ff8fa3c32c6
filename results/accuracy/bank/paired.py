"""auto's pick against the bank answer that ``trust.with_bank`` keeps in its place, point by point,
on finished runs (their results.json and predictions.npz): per kind of points, the ratio of the
two answers' test MSE (the own reward's on a dataset of one's own), a 90% interval for it from a
paired bootstrap over the points (the same points drawn for both answers), the share of points
where the bank's error is the larger, and the ratio without the one point whose errors differ
most. Where with_bank keeps the pick, the operator's bank answer with the lowest Bellman residual
stands in (what the rule turned down).

    python results/accuracy/bank/paired.py runs/pa-auto-bank runs/par-bank-trust runs/pam-bank-trust \\
        runs/hcn-bank-trust runs/hc-bank-trust runs/mc-bank-trust runs/ant-bank-trust \\
        > results/accuracy/bank/paired.txt

(the runs of ``pendulum-trust/auto.py``'s docstring; predictions.npz holds each answer's mean over
the run's seeds, so a three-seed run's MSE here is of that mean, not the tables' mean over seeds).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES, EvaluateConfig
from resolvent.experiments.trust import choose_method, mean_over_heldout, with_bank
from resolvent.model import split_bank, split_method

KINDS = ("reset", "trajectory", "dataset")
DRAWS = 4000


def point_errors(z, method: str, kind: str) -> np.ndarray | None:
    """Each point's squared error over the test rewards (the own reward where there are none): (n,)."""
    for s in ("test", "train"):
        key = f"{method}|{s}|{kind}"
        if f"{key}|pred" in z.files:
            return ((z[f"{key}|pred"] - z[f"{key}|truth"]) ** 2).mean(0)
    return None


def paired(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> dict:
    """b's MSE over a's, its 5-95% bootstrap interval (points drawn alike for both), the share of
    points where b's error is the larger, and the ratio without the point where they differ most."""
    draw = rng.integers(0, len(a), (DRAWS, len(a)))                                     # (D, n)
    ratios = b[draw].mean(1) / np.maximum(a[draw].mean(1), 1e-300)
    far = int(np.abs(b - a).argmax())
    rest = np.delete(np.arange(len(a)), far)
    return {"ratio": b.mean() / a.mean(), "lo": np.quantile(ratios, 0.05), "hi": np.quantile(ratios, 0.95),
            "worse": float(np.mean(b > a)), "without": b[rest].mean() / a[rest].mean()}


def main() -> None:
    rng = np.random.default_rng(0)
    tie = EvaluateConfig().auto_tie
    print("| run | auto's pick | the bank answer | | " + " | ".join(KINDS) + " |")
    print("|---|---|---|---|" + "---|" * len(KINDS))
    for run in map(Path, sys.argv[1:]):
        methods = json.loads((run / "results.json").read_text())["methods"]
        usual = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        choice = choose_method(methods, usual, tie)
        pick, kept = choice["chosen"], with_bank(methods, choice, tie)["chosen"]
        operator = split_method(pick)[0]
        if kept == pick:                     # what the rule turned down: the operator's bank answer, lowest residual
            own = [m for m in methods if split_bank(split_method(m)[0])[0] == operator
                   and split_bank(split_method(m)[0])[1] and isinstance(split_method(m)[1], int)
                   and mean_over_heldout(methods[m], "trust_bellman_each") is not None]
            if not own:
                continue
            kept = min(own, key=lambda m: (mean_over_heldout(methods[m], "trust_bellman_each"), split_method(m)[1]))
            label = f"{kept} (turned down)"
        else:
            label = f"**{kept}** (kept)"
        with np.load(run / "predictions.npz") as z:
            cells = {kind: (point_errors(z, pick, kind), point_errors(z, kept, kind)) for kind in KINDS}
        stats = {kind: paired(a, b, rng) for kind, (a, b) in cells.items() if a is not None and b is not None}
        rows = (("MSE ratio, bank / pick", lambda s: f"{s['ratio']:.3g}"),
                ("90% interval", lambda s: f"{s['lo']:.3g}-{s['hi']:.3g}"),
                ("points where the bank is worse", lambda s: f"{s['worse']:.0%}"),
                ("ratio without the point apart most", lambda s: f"{s['without']:.3g}"))
        for i, (what, cell) in enumerate(rows):
            head = f"| {run.name} | {pick} | {label} |" if i == 0 else "| | | |"
            print(f"{head} {what} | " + " | ".join(cell(stats[k]) if k in stats else "-" for k in KINDS) + " |")


if __name__ == "__main__":
    main()
