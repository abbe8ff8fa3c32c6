"""auto's pick on a finished run with the trust report, and two variants of its rule, each pick's
MSE over the best candidate's.

    python results/accuracy/ant-dir-expert-auto/pick.py RUN [--tie 1.5]

The rule (``trust.choose_method``): the candidates within ``tie`` of the best on agreement with
per-reward FQE on held-out rewards or on the Bellman residual (a residual band that holds every
candidate tells none apart and is left out); of them the longest expansion, kauto below k = 0
(``model.horizon_rank``), then the best agreement. The variants: ``kauto first``
(the same bands, kauto above every fixed k) and ``agreement band`` (the agreement band alone, the
rule's order). For every MSE the run scored (each reward set at each kind of points, against
Monte-Carlo truth), each pick's over the best candidate's.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import choose_method, mean_over_heldout, tie_bands
from resolvent.model import AUTO, horizon_rank, split_method


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--tie", type=float, default=1.5)
    args = ap.parse_args()
    methods = json.loads((Path(args.run) / "results.json").read_text())["methods"]
    candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
    agreement = {m: mean_over_heldout(methods[m], "trust_rel_rmse_each") for m in candidates}
    bellman = {m: mean_over_heldout(methods[m], "trust_bellman_each") for m in candidates}

    def band(sc: dict) -> set:
        return {m for m, v in sc.items() if v <= (1 + args.tie) * min(sc.values())}

    def kauto_first(m: str) -> tuple:
        return float("inf") if split_method(m)[1] == AUTO else horizon_rank(split_method(m)[1]), -agreement[m]

    def rule_order(m: str) -> tuple:
        return horizon_rank(split_method(m)[1]), -agreement[m]

    kept, _ = tie_bands(agreement, bellman, args.tie)                  # the rule's bands
    tied = sorted({m for ms in kept.values() for m in ms})
    picks = {"the rule": choose_method(methods, candidates, args.tie)["chosen"],
             "kauto first": max(tied, key=kauto_first),
             "agreement band": max(sorted(band(agreement)), key=rule_order)}
    assert picks["the rule"] == max(tied, key=rule_order)
    print(f"agreement band: {', '.join(sorted(band(agreement)))}\nBellman band: {', '.join(sorted(band(bellman)))}")
    print("\n| MSE | best candidate | its MSE | " + " | ".join(f"{k}: {v}" for k, v in picks.items())
          + " |\n|---|---|---|" + "---|" * len(picks))
    for key in (k for k in methods[candidates[0]] if k.endswith("_mse") and not k.startswith(("trust", "heldout"))):
        mse = {m: float(np.mean(methods[m][key])) for m in candidates if key in methods[m]}
        best = min(mse, key=mse.get)
        ratios = " | ".join(f"{mse[m] / mse[best]:.2f}x" for m in picks.values())
        print(f"| {key} | {best} | {mse[best]:.4g} | {ratios} |")


if __name__ == "__main__":
    main()
