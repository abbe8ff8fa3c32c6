"""auto's pick averaged with the other operators' answers at the same horizon: on every committed
run with its answers (predictions.npz) and the trust report, reward by reward as in
``per_reward.py`` (each reward's MSE over the best single candidate's, geometric mean):

    python results/accuracy/intervals/pair_average.py > results/accuracy/intervals/pair-average.md

Where two operators' expansions at one horizon tie on every trust signal (Pendulum-Angle medium:
favor+k400 and fb+k400 agree with FQE to 0.1266 against 0.1265), auto's rule keeps one of them by
the last digit. Their errors are not the same: the mean of the two answers is scored here, a rule
that reads no ground truth. Two ways to choose what is averaged, both from the run alone:

- ``pair``: the pick and the same expansion of the other of favor and fb;
- ``tied``: the pick and every candidate of the same expansion by another operator whose mean
  held-out agreement (relative RMSE against per-reward FQE) is at most (1 + tie) x the pick's, tie
  auto's (1.5 by default).
"""
from __future__ import annotations

import numpy as np
from per_reward import TIE, over_runs, runs, scores

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import mean_over_heldout
from resolvent.model import split_method

AGREEMENT = "trust_rel_rmse_each"   # held-out agreement: relative RMSE against per-reward FQE


def same_horizon(method: str, operator: str) -> str:
    """``operator`` answering at ``method``'s horizon (``split_method``: 0 for none)."""
    k = split_method(method)[1]
    return f"{operator}+k{k}" if k else operator


def mean_of(z, names: list[str]):
    return lambda s, kind: np.mean([z[f"{m}|{s}|{kind}|pred"] for m in names], 0)


def main() -> None:
    print("| run | auto's pick | the pick alone | pair: averaged with | pair | tied: averaged with | tied |\n"
          "|---|---|---|---|---|---|---|")
    ratios = {"pick": [], "pair": [], "tied": []}
    for run, methods, pick, z, have in runs():
        op = split_method(pick)[0]
        pair = [m for m in (same_horizon(pick, o) for o in ("favor", "fb") if o != op) if m in have]
        tied = [m for m in (same_horizon(pick, o) for o in AUTO_CANDIDATES if o != op)
                if m in have and (mine := mean_over_heldout(methods[m], AGREEMENT)) is not None
                and mine <= (1 + TIE) * mean_over_heldout(methods[pick], AGREEMENT)]
        per, _ = scores(z, have, {"pair": mean_of(z, [pick, *pair]), "tied": mean_of(z, [pick, *tied])})
        best = min(per[m] for m in have)
        row = {"pick": per[pick] / best, "pair": per["pair"] / best, "tied": per["tied"] / best}
        for k, v in row.items():
            ratios[k].append(v)
        print(f"| {run} | {pick} | {row['pick']:.3f}x | {', '.join(pair) or '-'} | {row['pair']:.3f}x "
              f"| {', '.join(tied) or '-'} | {row['tied']:.3f}x |")
    print("\nover the runs (geometric mean; worst): " + over_runs(ratios))


if __name__ == "__main__":
    main()
