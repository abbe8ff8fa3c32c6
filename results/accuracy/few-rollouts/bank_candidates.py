"""calibrate with the data's bank answers among its candidates, or without them: measured on the
answers and truths of finished runs made with the bank (their ``predictions.npz``).

    python results/accuracy/few-rollouts/bank_candidates.py RUN [RUN ...] [--seeds 100] > bank/bank.txt

For each reward set at each kind of points (n = 64 with Monte-Carlo truth), ``calibrate``'s answer
(``split_ratio`` of ``calibrate.py`` beside this script: the truth at m = 8 rolled-out points, 4
where the candidates disagree most and 4 at random, each reward's candidate chosen at the random
ones answering elsewhere; the median over ``--seeds`` draws of the random half) with auto's
candidates (every operator of ``AUTO_CANDIDATES`` with its expansions), and with them and each operator's bank answers
(``METHOD+bK+kk``); the best single candidate of each set, and what the product keeps offline
(``trust.with_bank`` on auto's pick). Every MSE over the best of auto's candidates' there.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from calibrate import split_ratio   # beside this script

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.trust import choose_method, with_bank
from resolvent.model import split_bank, split_method

SETS = ("train", "test", "probe", "heldout")
KINDS = ("dataset", "reset", "trajectory")
M = 8


def calibrated(pred: np.ndarray, truth: np.ndarray, seeds: int, candidates: tuple) -> float:
    """calibrate's MSE at all n points, the median over the random half's draws."""
    return float(np.median([split_ratio(pred, truth, 1.0, M, seed, candidates) for seed in range(seeds)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--seeds", type=int, default=100)
    args = ap.parse_args()
    print("| run | points | rewards | best of auto's (MSE) | kept offline | best with the bank | calibrate | "
          "calibrate with the bank |")
    print("|---|---|---|---|---|---|---|---|")
    every = {"kept": [], "best_bank": [], "cal": [], "cal_bank": []}
    for run in args.runs:
        results = RunDir(run).read_results()
        methods, tie = results["methods"], RunDir(run).read_config().get("auto_tie", 1.5)
        usual = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        banked = tuple(m for m in methods if "+b" in m and split_bank(split_method(m)[0])[0] in AUTO_CANDIDATES)
        kept = with_bank(methods, choose_method(methods, usual, tie), tie)["chosen"]
        preds = np.load(run / "predictions.npz")
        for kind in KINDS:
            for name in SETS:
                keys = {c: f"{c}|{name}|{kind}|pred" for c in usual + banked}
                if not all(k in preds.files for k in keys.values()):
                    continue
                truth = np.asarray(preds[f"{usual[0]}|{name}|{kind}|truth"], np.float64)        # (R, n)
                pred = {c: np.asarray(preds[k], np.float64) for c, k in keys.items()}           # c -> (R, n)
                mse = {c: float(((p - truth) ** 2).mean()) for c, p in pred.items()}
                best = min(mse[c] for c in usual)
                row = {"kept": mse[kept] / best, "best_bank": min(mse.values()) / best,
                       "cal": calibrated(np.stack([pred[c] for c in usual]), truth, args.seeds, usual) / best,
                       "cal_bank": calibrated(np.stack([pred[c] for c in usual + banked]), truth, args.seeds,
                                              usual + banked) / best}
                for k, v in row.items():
                    every[k].append(v)
                cells = " | ".join(f"{row[k]:.2f}" for k in ("best_bank", "cal", "cal_bank"))
                print(f"| {run.name} | {kind} | {name} ({truth.shape[0]}) | {min(usual, key=mse.get)} ({best:.3g}) | "
                      f"{kept}: {row['kept']:.2f} | {cells} |")
    print("\n| over every row | kept offline | best with the bank | calibrate | calibrate with the bank |")
    print("|---|---|---|---|---|")
    for what, fn in (("geometric mean", lambda v: f"{np.exp(np.mean(np.log(v))):.2f}"),
                     ("worst", lambda v: f"{np.max(v):.2f}"),
                     ("within 1.1x", lambda v: f"{np.sum(np.asarray(v) <= 1.1)}/{len(v)}")):
        print(f"| {what} | " + " | ".join(fn(np.asarray(every[k])) for k in ("kept", "best_bank", "cal", "cal_bank"))
              + " |")


if __name__ == "__main__":
    main()
