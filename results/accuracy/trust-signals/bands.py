"""auto's rule with a band of its own per signal, over every run scored so far: the nine of
``signals.py`` (``*.json`` here) and the four runs made with every candidate and the trust report
(``EXTRA``, folders beside this one). For each pair of bands, the pick's
true relative RMSE on the held-out rewards over the best candidate's, at every kind of points.

    python results/accuracy/trust-signals/bands.py > results/accuracy/trust-signals/bands.md

The rule (``trust.choose_method``): the candidates within ``ta`` of the best agreement or within
``tb`` of the best Bellman residual; of them the longest expansion, then the best agreement. A
residual band that holds every candidate tells none apart and is left out; the first table also
scores the rule before that (every band kept).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import mean_over_heldout
from resolvent.model import horizon_rank, split_method

HERE = Path(__file__).parent
EXTRA = ("pendulum-angle-medium-auto-seed2", "reacher-ensemble", "ant-dir-expert-auto", "halfcheetah-noisy-auto")
KINDS = (("reset", ""), ("trajectory", "traj_"), ("dataset", "data_"))


def from_run(path: Path) -> dict:
    """A run's candidates in ``signals.py``'s form: agreement, residual, true relative RMSE."""
    methods = json.loads((path / "results.json").read_text())["methods"]
    return {m: {"agreement": mean_over_heldout(e, "trust_rel_rmse_each"),
                "bellman": mean_over_heldout(e, "trust_bellman_each"),
                "true": {k: float(np.mean(e[p + "heldout_rel_rmse"])) for k, p in KINDS if p + "heldout_rel_rmse" in e}}
            for m, e in methods.items() if split_method(m)[0] in AUTO_CANDIDATES}


def pick(scores: dict, ta: float, tb: float, blind_kept: bool = False) -> str:
    """The rule's pick with bands ``ta`` and ``tb``; ``blind_kept``: as before, a residual band
    holding every candidate kept."""
    kept = set()
    for signal, tie in (("agreement", ta), ("bellman", tb)):
        best = min(v[signal] for v in scores.values())
        band = {m for m, v in scores.items() if v[signal] <= (1 + tie) * best}
        if signal == "agreement" or blind_kept or len(band) < len(scores):
            kept |= band
    return max(sorted(kept), key=lambda m: (horizon_rank(split_method(m)[1]), -scores[m]["agreement"]))


def main() -> None:
    runs = {f.stem: json.loads(f.read_text()) for f in sorted(HERE.glob("*.json"))}
    runs |= {name: from_run(HERE.parent / name) for name in EXTRA}
    grid = [(ta, tb) for ta in (0.5, 1.0, 1.5, 2.0) for tb in (0.0, 0.5, 1.0, 1.5, 2.0)]
    over = {}
    for blind_kept in (False, True):
        for ta, tb in grid:
            for name, scores in runs.items():
                m = pick(scores, ta, tb, blind_kept)
                kinds = next(iter(scores.values()))["true"]
                over[ta, tb, blind_kept, name] = m, [scores[m]["true"][k] / min(v["true"][k] for v in scores.values())
                                                     for k in kinds]
    print("| agreement band | Bellman band | worst | mean | picks over 1.1x the best | before (a residual band holding "
          "every candidate kept): worst | mean | over 1.1x |\n|---|---|---|---|---|---|---|---|")
    for ta, tb in grid:
        cells = []
        for blind_kept in (False, True):
            r = [x for name in runs for x in over[ta, tb, blind_kept, name][1]]
            cells += [f"{max(r):.2f}x", f"{np.mean(r):.3f}x", f"{sum(x > 1.1 for x in r)} of {len(r)}"]
        print(f"| {ta:.0%} | {tb:.0%} | " + " | ".join(cells) + " |")
    shown = ((1.5, 1.5), (1.5, 1.0), (1.5, 0.0))
    print("\n| run | " + " | ".join(f"{ta:.0%} / {tb:.0%}" for ta, tb in shown) + " |\n|---|---|---|---|")
    for name in runs:
        cells = (f"{over[ta, tb, False, name][0]}: " + " / ".join(f"{x:.2f}" for x in over[ta, tb, False, name][1])
                 for ta, tb in shown)
        print(f"| {name} | " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main()
