"""A per-point choice among a run's answers by their consensus, no ground truth: measured, and no.

    python results/accuracy/per-point/consensus.py $(dirname $(git ls-files 'results/**/predictions.npz')) \
        > results/accuracy/per-point/consensus.txt

auto keeps one answer for every point (``trust.choose_method``); at HalfCheetah-Vel expert's dataset
states it is 4.5x / 29x the best candidate's MSE (test / probe rewards). Could each point take its
own answer, reward-free (so the answer stays linear in r)? The rule tried: at each point the
candidate whose answers to the run's training rewards (the dataset's own on a dataset run) lie
closest to the candidates' per-point median (each reward's deviation over the median's variance
across the points): a per-point medoid. Its MSE on the test (or training) and probe rewards over
the best single candidate's, beside auto's pick's (``choose_method`` + ``with_bank``, band 1.5,
recomputed from each run's trust report), the same medoid among the long expansions only (K >=
``LONG``, and kauto), and the per-point median of the answers (not linear in r: a reference only).
Every committed run with predictions (``predictions.npz``) is read.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from resolvent.experiments.trust import choose_method, with_bank
from resolvent.model import AUTO, split_method

LONG = 150   # the long expansions' pool: METHOD+kK with K >= this, and METHOD+kauto


def medoid_mse(z, pool: list[str], kind: str, rewards: str, truth: np.ndarray) -> float:
    """MSE on ``rewards`` of each point's medoid among ``pool``, chosen by the training rewards' answers."""
    signal = np.stack([z[f"{m}|train|{kind}|pred"] for m in pool])                    # (C, R, n)
    median = np.median(signal, 0)                                                      # (R, n)
    pick = ((signal - median) ** 2 / (median.var(1, keepdims=True) + 1e-12)).mean(1).argmin(0)   # (n,)
    answers = np.stack([z[f"{m}|{rewards}|{kind}|pred"] for m in pool])                # (C, R', n)
    return float(((answers[pick, :, np.arange(answers.shape[2])].T - truth) ** 2).mean())


def main() -> None:
    print("MSE over the best single candidate's: auto's pick / per-point medoid of every candidate / of the long "
          f"expansions (K >= {LONG}, kauto) / per-point median of every candidate (not linear in r)")
    for d in sys.argv[1:]:
        z = np.load(f"{d}/predictions.npz")
        with open(f"{d}/results.json") as f:
            r = json.load(f)
        meths = sorted({k.split("|")[0] for k in z.files if k.split("|")[0] != "fqe"})
        kinds = [k for k in ("reset", "trajectory", "dataset") if f"{meths[0]}|train|{k}|pred" in z.files]
        sets = [s for s in ("test", "probe") if f"{meths[0]}|{s}|{kinds[0]}|pred" in z.files]
        if "test" not in sets:      # a dataset of one's own: its own reward (train) and the probes
            sets = ["train", *(["probe"] if f"{meths[0]}|probe|{kinds[0]}|pred" in z.files else [])]
        try:
            candidates = tuple(m for m in meths if m in r["methods"])
            auto = with_bank(r["methods"], choose_method(r["methods"], candidates, 1.5), 1.5)["chosen"]
        except ValueError:          # no trust report: auto cannot choose
            auto = None
        longs = [m for m in meths if split_method(m)[1] == AUTO or split_method(m)[1] >= LONG]
        print(f"{d.split('results/accuracy/')[-1]}: auto's pick {auto}")
        for kind in kinds:
            for s in sets:
                truth = z[f"{meths[0]}|{s}|{kind}|truth"]                               # (R', n)
                answers = np.stack([z[f"{m}|{s}|{kind}|pred"] for m in meths])          # (C, R', n)
                mse = ((answers - truth) ** 2).mean((1, 2))                             # (C,)
                best = mse.min()
                cells = [mse[meths.index(auto)] / best if auto in meths else np.nan,
                         medoid_mse(z, meths, kind, s, truth) / best, medoid_mse(z, longs, kind, s, truth) / best,
                         ((np.median(answers, 0) - truth) ** 2).mean() / best]
                print(f"   {kind:>10} {s:>6} best {meths[mse.argmin()]:>16}  "
                      + " / ".join(f"{c:7.2f}x" for c in cells))


if __name__ == "__main__":
    main()
