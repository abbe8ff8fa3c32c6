"""auto's pick before and after kauto may take the longest fixed expansion's place, on every
committed run that has kauto candidates, the trust report and Monte-Carlo truth.

    python results/accuracy/trust-signals/kauto_rule.py [MORE_RESULTS_JSON ...] \
        > results/accuracy/trust-signals/kauto_rule.md

Before: of the candidates in auto's bands (150% on agreement with per-reward FQE and on the
Bellman residual, ``trust.tie_bands``) the longest fixed expansion, kauto below every fixed k.
Now (``trust.choose_method``): a kept kauto whose agreement is the better takes its place, the
best such. Each pick's MSE over the best candidate's for every error the run has (test, probe or
training rewards at the reset, trajectory and dataset points; mean over seeds): the worst and the
geometric mean. The bank's replacement (``with_bank``) is left out of both columns alike.
"""
from __future__ import annotations

import glob
import json
import sys

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import choose_method, mean_over_heldout, tie_bands
from resolvent.model import AUTO, horizon_rank, split_method

ERRORS = [f"{kind}{rewards}_mse" for rewards in ("test", "probe", "train") for kind in ("", "traj_", "data_")]
TIE = 1.5


def before(methods: dict, candidates: tuple[str, ...]) -> str:
    """The rule before: the longest fixed expansion among the tied (kauto below every fixed k)."""
    scores = {m: v for m in candidates if (v := mean_over_heldout(methods[m], "trust_rel_rmse_each")) is not None}
    bellman = {m: v for m in scores if (v := mean_over_heldout(methods[m], "trust_bellman_each")) is not None}
    kept, _ = tie_bands(scores, bellman, TIE)
    tied = sorted({m for ms in kept.values() for m in ms})
    return max(tied, key=lambda m: (horizon_rank(split_method(m)[1]), -scores[m]))


def main() -> None:
    print("| run | before: pick, worst, geometric mean | now: pick, worst, geometric mean |\n|---|---|---|")
    for path in sorted(set(glob.glob("results/**/results.json", recursive=True)) | set(sys.argv[1:])):
        with open(path) as f:
            methods = json.load(f).get("methods", {})
        candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        if not (any("trust_rel_rmse_each" in methods[m] for m in candidates)
                and any(split_method(m)[1] == AUTO for m in candidates)):
            continue
        errors = [k for k in ERRORS if all(k in methods[m] for m in candidates)]
        if not errors:
            continue
        best = {k: min(np.mean(methods[m][k]) for m in candidates) for k in errors}
        cells = []
        for pick in (before(methods, candidates), choose_method(methods, candidates, TIE)["chosen"]):
            ratios = [np.mean(methods[pick][k]) / best[k] for k in errors]
            cells.append(f"{pick}: {max(ratios):.2f}x, {np.exp(np.mean(np.log(ratios))):.2f}x")
        now = f"**{cells[1]}**" if cells[0] != cells[1] else cells[1]
        print(f"| {path.removesuffix('/results.json')} | {cells[0]} | {now} |")


if __name__ == "__main__":
    main()
