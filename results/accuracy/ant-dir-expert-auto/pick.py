"""auto's pick on a finished run with the trust report, under the tie order of today and the one
before (kauto below every fixed horizon), each candidate's MSE over the best candidate's.

    python results/accuracy/ant-dir-expert-auto/pick.py RUN [--tie 1.5]

Prints the candidates tied on either signal (agreement with per-reward FQE on held-out rewards,
Bellman residual), the two picks, and for every MSE the run scored (each reward set at each kind
of points, against Monte-Carlo truth) the picks' MSE over the best candidate's.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import choose_method, mean_over_heldout
from resolvent.model import AUTO, split_method


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--tie", type=float, default=1.5)
    args = ap.parse_args()
    methods = json.loads((Path(args.run) / "results.json").read_text())["methods"]
    candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
    now = choose_method(methods, candidates, args.tie)
    scores = {m: mean_over_heldout(methods[m], "trust_rel_rmse_each") for m in candidates}
    bellman = {m: mean_over_heldout(methods[m], "trust_bellman_each") for m in candidates}
    tied = [m for sc in (scores, bellman) for m, v in sc.items() if v <= (1 + args.tie) * min(sc.values())]
    before = max(sorted(set(tied)), key=lambda m: (-1 if split_method(m)[1] == AUTO else split_method(m)[1],
                                                   -scores[m]))
    print(f"tied: {', '.join(sorted(set(tied)))}")
    print(f"pick now: {now['chosen']}   pick before (kauto below k = 0): {before}")
    picks = list(dict.fromkeys((now["chosen"], before)))
    print("\n| MSE | best candidate | its MSE | " + " | ".join(picks) + " |\n|---|---|---|" + "---|" * len(picks))
    for key in (k for k in methods[candidates[0]] if k.endswith("_mse") and not k.startswith(("trust", "heldout"))):
        mse = {m: float(np.mean(methods[m][key])) for m in candidates if key in methods[m]}
        best = min(mse, key=mse.get)
        print(f"| {key} | {best} | {mse[best]:.4g} | "
              + " | ".join(f"{mse[m] / mse[best]:.2f}x" for m in picks) + " |")


if __name__ == "__main__":
    main()
