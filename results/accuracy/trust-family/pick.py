"""auto's pick when the trust report also holds some of the family's own training rewards
(``trust_family_rewards``), against its pick on the generic held-out rewards alone.

    python results/accuracy/trust-family/pick.py RUN [--tie 1.5]

RUN: a finished ``resolvent evaluate`` run with the trust report and ``trust_family_rewards`` > 0
(its held-out rewards ``heldout-i`` and ``given:NAME``). The rule is auto's own
(``trust.choose_method``, band ``tie``), fed the run's agreement and Bellman residual over three
sets of the trust report's rewards: the generic ones (what auto sees by default on a family), the
family's (``given:``), and both. For each pick, its MSE over the best candidate's for every reward
set at every kind of points, against Monte-Carlo truth.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import choose_method
from resolvent.model import split_method

SIGNALS = ("trust_rel_rmse_each", "trust_bellman_each")
SETS = ("train", "test", "probe", "heldout")
KINDS = (("reset", ""), ("trajectory", "traj_"), ("dataset", "data_"))


def restricted(entry: dict, keep) -> dict:
    """A method's results entry with its trust signals over the held-out rewards ``keep`` accepts."""
    return {**entry, **{s: {r: v for r, v in entry[s].items() if keep(r)} for s in SIGNALS if s in entry}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--tie", type=float, default=1.5)
    args = ap.parse_args()
    methods = json.loads((Path(args.run) / "results.json").read_text())["methods"]
    candidates = tuple(m for m in methods
                       if split_method(m)[0] in AUTO_CANDIDATES and "trust_rel_rmse_each" in methods[m])
    views = {"generic held-out rewards": lambda r: r.startswith("heldout-"),
             "the family's rewards": lambda r: r.startswith("given:"),
             "both": lambda r: True}
    cols = [(s, k, p) for s in SETS for k, p in KINDS if f"{p}{s}_mse" in methods[candidates[0]]]
    print("| auto judged on | pick | " + " | ".join(f"{s}, {k}" for s, k, _ in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    best = {c: min(np.mean(methods[m][c[2] + c[0] + "_mse"]) for m in candidates) for c in cols}
    for label, keep in views.items():
        if not any(keep(r) for r in methods[candidates[0]]["trust_rel_rmse_each"]):
            print(f"| {label} | (none in this run) |" + " |" * len(cols))
            continue
        pick = choose_method({m: restricted(methods[m], keep) for m in candidates}, candidates, args.tie)["chosen"]
        ratios = [np.mean(methods[pick][p + s + "_mse"]) / best[(s, k, p)] for s, k, p in cols]
        print(f"| {label} | {pick} | " + " | ".join(f"{x:.2f}" for x in ratios) + " |")
    print("\nThe best candidate per column: " + ", ".join(
        f"{s}, {k}: {min(candidates, key=lambda m: np.mean(methods[m][p + s + '_mse']))}" for s, k, p in cols))


if __name__ == "__main__":
    main()
