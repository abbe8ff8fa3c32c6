"""A pick per reward against auto's pick per run, scored on a finished run's predictions.npz.

    python results/accuracy/trust-signals/per_reward.py RUN [--tie 1.5]

The candidates are the run's answers that ``auto`` chooses among (each operator, its expansions
and ``+kauto``). For every reward set at every kind of points (each reward's answer beside the
Monte-Carlo truth in predictions.npz), the MSE over the set's rewards of:

- **best single**: the one candidate best on this set at these points, in hindsight (the ratios'
  denominator);
- **the rule**: auto's pick for the whole run (``trust.choose_method``, with the trust report);
- **consensus**: per reward, the candidate whose answers at the points are nearest (mean squared
  distance) to the median of every candidate's answers there. It needs no truth and no oracle:
  only the candidates' own answers for that reward at the points asked about;
- **consensus in the bands**: the same, among (and the median of) the rule's band (agreement or
  Bellman residual within ``tie`` of the best; a residual band holding every candidate left out, as
  the rule does); **in the agreement band**: among those within ``tie`` of the best agreement with
  per-reward FQE on the held-out rewards;
- **their median**: the median of every candidate's answer at each point (an answer no single
  candidate gives); **the long ones' median**: the same over the long expansions only (``+k150``,
  ``+k400`` and ``+kauto`` of every operator: the horizons that the short ones' shared bias
  does not reach); **the kautos' median**: over each operator's ``+kauto`` only;
- **best per reward**: per reward, the candidate nearest the truth, in hindsight (a floor).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import choose_method, mean_over_heldout, tie_bands
from resolvent.model import split_method

SETS = ("train", "test", "probe")
LONG = ("+k150", "+k400", "+kauto")      # the long expansions' suffixes
KINDS = ("reset", "trajectory", "dataset")


def consensus_pick(preds: dict[str, np.ndarray], among: list[str]) -> np.ndarray:
    """Per reward, the index in ``among`` of the answer nearest the median of ``among``'s answers.
    preds: candidate -> (R, P) answers."""
    stack = np.stack([preds[m] for m in among])                                  # (C', R, P)
    median = np.median(stack, axis=0)                                            # (R, P)
    dist = np.stack([((preds[m] - median) ** 2).mean(-1) for m in among])       # (C', R)
    return dist.argmin(0)                                                        # (R,)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--tie", type=float, default=1.5)
    args = ap.parse_args()
    run = Path(args.run)
    methods = json.loads((run / "results.json").read_text())["methods"]
    z = np.load(run / "predictions.npz")
    candidates = sorted(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
    if all("trust_rel_rmse_each" in methods[m] for m in candidates):
        rule = choose_method(methods, tuple(candidates), args.tie)["chosen"]
        agreement = {m: mean_over_heldout(methods[m], "trust_rel_rmse_each") for m in candidates}
        bellman = {m: mean_over_heldout(methods[m], "trust_bellman_each") for m in candidates}
        kept, _ = tie_bands(agreement, bellman, args.tie)          # the rule's bands
        band, agreeing = sorted({m for ms in kept.values() for m in ms}), sorted(kept["agreement"])
        print(f"the rule: {rule}; its band: {', '.join(band)}; the agreement band: {', '.join(agreeing)}\n")
    else:
        rule, band, agreeing = None, candidates, candidates
    head = ["set", "points", "best single", "its MSE"] + (["the rule"] if rule else []) + [
        "consensus", "consensus in the bands", "consensus in the agreement band", "their median",
        "the long ones' median", "the kautos' median", "best per reward"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for s in SETS:
        for kind in KINDS:
            key = f"{candidates[0]}|{s}|{kind}|pred"
            if key not in z.files:
                continue
            truth = z[f"{candidates[0]}|{s}|{kind}|truth"].reshape(-1, z[key].shape[-1])   # (R, P)
            preds = {m: z[f"{m}|{s}|{kind}|pred"].reshape(truth.shape) for m in candidates}
            err = {m: ((p - truth) ** 2).mean(-1) for m, p in preds.items()}            # (R,) each
            best = min(candidates, key=lambda m: err[m].mean())
            rows = np.arange(len(truth))

            def per_reward(idx: np.ndarray, among: list[str]) -> float:
                return float(np.stack([err[m] for m in among])[idx, rows].mean())

            cells = [s, kind, best, f"{err[best].mean():.4g}"]
            if rule:
                cells.append(f"{err[rule].mean() / err[best].mean():.2f}x")
            floor = np.stack([err[m] for m in candidates]).min(0).mean()

            def median_of(among: list[str]) -> float:
                return float(((np.median(np.stack([preds[m] for m in among]), axis=0) - truth) ** 2).mean())

            cells += [f"{per_reward(consensus_pick(preds, candidates), candidates) / err[best].mean():.2f}x",
                      f"{per_reward(consensus_pick(preds, band), band) / err[best].mean():.2f}x",
                      f"{per_reward(consensus_pick(preds, agreeing), agreeing) / err[best].mean():.2f}x",
                      *(f"{median_of(among) / err[best].mean():.2f}x" if among else "-" for among in (
                          candidates, [m for m in candidates if m.endswith(LONG)],
                          [m for m in candidates if m.endswith("+kauto")])),
                      f"{floor / err[best].mean():.2f}x"]
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
