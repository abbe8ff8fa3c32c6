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
recomputed from each run's trust report) and the per-point median of the answers (not linear in r:
a reference only). Every committed run with predictions (``predictions.npz``) is read.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from resolvent.experiments.trust import choose_method, with_bank


def load(d):
    z = np.load(f"{d}/predictions.npz")
    with open(f"{d}/results.json") as f:
        r = json.load(f)
    return z, r


for d in sys.argv[1:]:
    z, r = load(d)
    meths = sorted({k.split("|")[0] for k in z.files if k.split("|")[0] != "fqe"})
    kinds = [k for k in ("reset", "trajectory", "dataset")
             if f"{meths[0]}|test|{k}|pred" in z.files or f"{meths[0]}|train|{k}|pred" in z.files]
    sets = [s for s in ("test", "probe") if f"{meths[0]}|{s}|{kinds[0]}|pred" in z.files]
    if "test" not in sets:
        sets = ["train", "probe"] if f"{meths[0]}|probe|{kinds[0]}|pred" in z.files else ["train"]
    try:
        candidates = tuple(m for m in meths if m in r["methods"])
        auto = with_bank(r["methods"], choose_method(r["methods"], candidates, 1.5), 1.5)["chosen"]
    except ValueError:          # no trust report: auto cannot choose
        auto = None
    out = {}
    for kind in kinds:
        # reward-free signal: the train rewards' answers (the family's training rewards / the dataset's own)
        sig = "train" if f"{meths[0]}|train|{kind}|pred" in z.files else "heldout"
        P = np.stack([z[f"{m}|{sig}|{kind}|pred"] for m in meths])       # (C, R, n)
        med = np.median(P, 0)                                            # (R, n)
        scale = med.var(1, keepdims=True) + 1e-12                        # (R, 1)
        dev = ((P - med) ** 2 / scale).mean(1)                           # (C, n)
        pick = dev.argmin(0)                                             # (n,)
        for s in sets:
            Q = np.stack([z[f"{m}|{s}|{kind}|pred"] for m in meths])     # (C, R, n)
            T = z[f"{meths[0]}|{s}|{kind}|truth"]
            mse = ((Q - T) ** 2).mean((1, 2))                            # (C,)
            pp = Q[pick, :, np.arange(Q.shape[2])].transpose(1, 0)        # (R, n)
            med_q = np.median(Q, 0)
            best = mse.min()
            out[(kind, s)] = dict(best=meths[mse.argmin()],
                                  auto=(mse[meths.index(auto)] / best if auto in meths else np.nan),
                                  perpoint=((pp - T) ** 2).mean() / best, median=((med_q - T) ** 2).mean() / best)
    print(d.split("results/accuracy/")[-1], "auto:", auto)
    for (kind, s), v in out.items():
        print(f"   {kind:>10} {s:>6} best {v['best']:>16}  auto {v['auto']:6.2f}x  "
              f"per-point medoid {v['perpoint']:6.2f}x  median {v['median']:6.2f}x")
