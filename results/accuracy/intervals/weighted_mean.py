"""The product's mean (``product_rule.py``: ``choose_method``, ``with_bank``, ``with_partners``)
against the same members weighted by their held-out agreement, w_i ~ a_i^(-p) (a_i the mean
relative RMSE against per-reward FQE on the held-out rewards; p = 2 weighs by an estimate of each
member's inverse MSE), on every committed run with its answers and the trust report, reward by
reward as in ``per_reward.py``:

    python results/accuracy/intervals/weighted_mean.py > results/accuracy/intervals/weighted-mean.md

Reads no ground truth to weigh. Where the members tie to three digits (Reacher 0.3106 against
0.3114, Pendulum-Angle medium 0.1265 against 0.1266) no weighting can move the mean; where they
do not (HalfCheetah-Vel, 0.21 against 0.26) it says whether the better-agreeing member should
count more.
"""
from __future__ import annotations

import numpy as np
from pair_average import AGREEMENT
from per_reward import TIE, over_runs, runs, scores

from resolvent.experiments.trust import choose_method, mean_over_heldout, with_bank, with_partners
from resolvent.model import split_mean

POWERS = (0, 1, 2, 4)   # p = 0: the product's plain mean


def weighted(z, names: list[str], w: np.ndarray):
    w = w / w.sum()
    return lambda s, kind: sum(wi * z[f"{m}|{s}|{kind}|pred"] for m, wi in zip(names, w))


def main() -> None:
    print("| run | members | held-out agreement | " + " | ".join(f"p = {p}" for p in POWERS) + " |\n"
          "|---|---|---|" + "---|" * len(POWERS))
    ratios = {f"p={p}": [] for p in POWERS}
    for run, methods, _, z, have in runs():
        chosen = with_partners(with_bank(methods, choose_method(methods, tuple(have), TIE), TIE), TIE)["chosen"]
        members = list(split_mean(chosen))
        if len(members) < 2 or not all(m in have for m in members):
            continue
        a = np.array([mean_over_heldout(methods[m], AGREEMENT) for m in members])
        per, _ = scores(z, have, {f"p={p}": weighted(z, members, a ** -float(p)) for p in POWERS})
        best = min(per[m] for m in have)
        for k in ratios:
            ratios[k].append(per[k] / best)
        print(f"| {run} | {', '.join(members)} | {', '.join(f'{v:.4f}' for v in a)} | "
              + " | ".join(f"{ratios[k][-1]:.3f}x" for k in ratios) + " |")
    print("\nover the runs (geometric mean; worst), each reward's MSE over the best single candidate's: "
          + over_runs(ratios))


if __name__ == "__main__":
    main()
