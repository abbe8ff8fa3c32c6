"""``resolvent calibrate`` with the action-support check: the exact half of its m rolled-out
points placed at the unsupported points first, against the rule in the product (all of the exact
half where the candidates disagree most, ``calibrate.labelled_points``), on the committed runs
with every candidate's answers and the truth (``measure.py``'s runs, the check rebuilt as
``resolvent evaluate`` builds it):

    python results/accuracy/support/calibrate_first.py > results/accuracy/support/calibrate-first.md

Two orders of the unsupported points are tried: by the candidates' disagreement among them, and
by rho (most unsupported first); the other points follow by disagreement, and the random half is
drawn as ``labelled_points`` draws it. Scored as ``few-rollouts/calibrate.py``'s ``split``:
calibrate's answer (the truth at the m rolled-out points, each reward's candidate chosen at the
random half elsewhere) at all n points, its MSE over the best single candidate's, median over 20
seeds of the random half; in brackets how many of the unsupported points the exact half holds.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import KINDS, RUNS, run_support  # noqa: E402

from resolvent.experiments.calibrate import combine, disagreement, labelled_points  # noqa: E402
from resolvent.experiments.evaluate_config import AUTO_CANDIDATES  # noqa: E402
from resolvent.model import split_method  # noqa: E402

SETS = ("test", "probe")
MS = (8, 16)
SEEDS = 20
ORDERS = ("by disagreement (the product)", "unsupported first, by disagreement", "unsupported first, by rho")


def placed(pred: np.ndarray, m: int, seed: int, rho: np.ndarray, order: str) -> tuple[np.ndarray, np.ndarray]:
    """The exact half and the random half of m rolled-out points under one of ``ORDERS``."""
    if order == ORDERS[0]:
        return labelled_points(pred, m, seed)
    ranked = np.argsort(-disagreement(pred), kind="stable")                          # (n,)
    bad = np.flatnonzero(rho > 1)
    first = (ranked[np.isin(ranked, bad)] if order == ORDERS[1]
             else bad[np.argsort(-rho[bad], kind="stable")])
    exact = np.concatenate([first, ranked[~np.isin(ranked, first)]])[:m // 2]
    others = np.setdiff1d(np.arange(pred.shape[-1]), exact)
    return np.sort(exact), np.sort(np.random.default_rng(seed).choice(others, m - m // 2, replace=False))


def score(pred: np.ndarray, truth: np.ndarray, exact: np.ndarray, at_random: np.ndarray, candidates: tuple) -> float:
    """calibrate's MSE at all n points over the best single candidate's."""
    q = combine(pred, truth[:, np.concatenate([exact, at_random])], exact, at_random, candidates)[0]   # (R, n)
    return float(((q - truth) ** 2).mean() / ((pred - truth[None]) ** 2).mean((1, 2)).min())


def main() -> None:
    cols = [f"m = {m}: {order}" for m in MS for order in ORDERS]
    print("| run | points | rewards | unsupported | " + " | ".join(cols) + " |\n|---|---|---|---|" + "---|" * len(cols))
    for run in RUNS:
        support, points, actor = run_support(run)
        with open(f"{run}/results.json") as f:
            methods = json.load(f)["methods"]
        candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        z = np.load(f"{run}/predictions.npz")
        for kind in KINDS:
            obs = np.asarray(points[kind].obs0, np.float32)
            check = support.check(obs, np.asarray(actor(obs)))
            bad = np.flatnonzero(check.unsupported)
            for name in SETS:
                have = tuple(c for c in candidates if f"{c}|{name}|{kind}|pred" in z.files)   # a run keeping a few
                if len(have) < 2:
                    continue
                truth = np.asarray(z[f"{have[0]}|{name}|{kind}|truth"], np.float64)
                truth = truth.reshape(-1, truth.shape[-1])                                   # (R, n)
                pred = np.stack([np.asarray(z[f"{c}|{name}|{kind}|pred"], np.float64).reshape(truth.shape)
                                 for c in have])                                             # (C, R, n)
                cells = []
                for m in MS:
                    for order in ORDERS:
                        draws = [placed(pred, m, s, check.relative, order) for s in range(SEEDS)]
                        ratio = np.median([score(pred, truth, e, r, have) for e, r in draws])
                        cells.append(f"{ratio:.3f} ({len(np.intersect1d(draws[0][0], bad))} of {len(bad)})")
                print(f"| {run} | {kind} | {name} ({len(truth)}; {len(have)} candidates) | {len(bad)}/{len(obs)} | "
                      + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
