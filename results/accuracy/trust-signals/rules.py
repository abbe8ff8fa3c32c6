"""auto's rule on the candidates scored by ``signals.py``: its pick's true relative RMSE over the
best candidate's, next to the rule on either signal alone.

    python results/accuracy/trust-signals/rules.py [--ties 0.2,1.0,1.5] FILE.json [FILE.json ...] > rules.md

Each band ``tie`` (a fraction over the best score; ``EvaluateConfig.auto_tie`` the default) for
the rule on both signals and on either alone (agreement alone at 20% was auto's rule before).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from resolvent.experiments import EvaluateConfig
from resolvent.experiments.trust import choose_method


def entries(scores: dict, signals: tuple[str, ...]) -> dict:
    keys = {"agreement": "trust_rel_rmse_each", "bellman": "trust_bellman_each"}
    return {m: {keys[s]: {"all": [v[s]]} for s in signals} for m, v in scores.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--ties", default=str(EvaluateConfig.auto_tie))
    a = ap.parse_args()
    ties = [float(t) for t in a.ties.split(",")]
    kinds = ("reset", "trajectory", "dataset")
    print("| run | rule (band over the best) | pick | " + " | ".join(f"held-out, {k} pts" for k in kinds) + " |")
    print("|---|---|---|" + "---|" * len(kinds))
    for path in a.files:
        scores = json.loads(Path(path).read_text())
        have = next(iter(scores.values()))["true"]
        best = {k: min(v["true"][k] for v in scores.values()) for k in kinds if k in have}
        # agreement alone: choose_method without the residual; the residual alone: the same rule
        # with the residual standing in for the agreement
        alone = {m: {"trust_rel_rmse_each": {"all": [v["bellman"]]}} for m, v in scores.items()}
        rules = [(f"{label}, {t:.0%}", choose_method(e, tuple(scores), t))
                 for label, e in (("both", entries(scores, ("agreement", "bellman"))),
                                  ("agreement alone", entries(scores, ("agreement",))), ("Bellman alone", alone))
                 for t in ties]
        for i, (rule, pick) in enumerate(rules):
            m = pick["chosen"]
            cells = []
            for k in kinds:
                if k not in best:
                    cells.append("-")
                    continue
                over = scores[m]["true"][k] / best[k] - 1
                cells.append(f"**{over:+.0%}**" if over <= 0.10 else f"{over:+.0%}")
            print(f"| {Path(path).stem if i == 0 else ''} | {rule} | {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
