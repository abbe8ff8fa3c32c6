"""Answers made of several candidates, scored on many finished runs' predictions.npz at once.

    python results/accuracy/trust-signals/combos.py RUN [RUN ...] [--sets test,probe]

``per_reward.py`` scores one run in full; this scores the combinations across runs, on the
held-out reward sets (test and probes) at every kind of points. Each answer's MSE is divided by
that of the best single candidate on the same set and points, in hindsight (the candidates: each
operator of ``AUTO_CANDIDATES``, its expansions and ``+kauto``). The answers, none of which needs
truth, an oracle or another reward:

- **mean of the k400s** and **mean of the long fixed** (``+k150`` and ``+k400`` of every operator):
  a fixed average of linear answers, so linear, monotone and constant-exact like each of them;
- **median of the long** (``+k150``, ``+k400``, ``+kauto``), **median of the kautos** and
  **mean of the kautos**: monotone and constant-exact, not linear (kauto picks a horizon per
  reward, and a median is not linear);
- **median of all**: every candidate, the short horizons too;
- **best per reward**: per reward, the candidate nearest the truth, in hindsight (a floor).

Printed: one row per run (each answer's range over its sets and kinds of points), then each
answer's worst ratio, its mean, and how many of the cells are over 1.1x.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.model import split_method

KINDS = ("reset", "trajectory", "dataset")
SINGLES = ("fb+k400", "fb+kauto", "favor+k400", "favor+kauto")    # single candidates, for comparison


def _answers(preds: dict[str, np.ndarray]) -> dict[str, np.ndarray | None]:
    """Every scored combination's answer, (R, P), from the candidates' answers; None where a run
    lacks its members."""
    def pick(suffixes: tuple[str, ...]) -> list[np.ndarray]:
        return [p for m, p in preds.items() if m.endswith(suffixes)]

    def mean(xs: list[np.ndarray]) -> np.ndarray | None:
        return np.mean(xs, axis=0) if xs else None

    def median(xs: list[np.ndarray]) -> np.ndarray | None:
        return np.median(xs, axis=0) if xs else None

    return {"mean of the k400s": mean(pick(("+k400",))),
            "mean of the long fixed": mean(pick(("+k150", "+k400"))),
            "median of the long": median(pick(("+k150", "+k400", "+kauto"))),
            "median of the kautos": median(pick(("+kauto",))),
            "mean of the kautos": mean(pick(("+kauto",))),
            "median of all": median(list(preds.values())),
            **{m: preds[m] for m in SINGLES if m in preds}}


def score_run(run: Path, sets: tuple[str, ...]) -> list[dict[str, float]]:
    """Per (set, kind) of ``run``: each answer's MSE over the best single candidate's, and the
    best per reward's."""
    z = np.load(run / "predictions.npz")
    methods = sorted({k.split("|")[0] for k in z.files})
    candidates = [m for m in methods if split_method(m)[0] in AUTO_CANDIDATES]
    cells = []
    for s in sets:
        for kind in KINDS:
            key = f"{candidates[0]}|{s}|{kind}|pred"
            if key not in z.files:
                continue
            shape = z[key].shape
            truth = z[f"{candidates[0]}|{s}|{kind}|truth"].reshape(-1, shape[-1])       # (R, P)
            preds = {m: z[f"{m}|{s}|{kind}|pred"].reshape(truth.shape) for m in candidates}
            err = {m: ((p - truth) ** 2).mean(-1) for m, p in preds.items()}          # (R,) each
            best = min(err[m].mean() for m in candidates)
            row = {name: float(((a - truth) ** 2).mean() / best)
                   for name, a in _answers(preds).items() if a is not None}
            row["best per reward"] = float(np.stack(list(err.values())).min(0).mean() / best)
            cells.append(row)
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--sets", default="test,probe", help="reward sets scored, comma-separated")
    args = ap.parse_args()
    sets = tuple(args.sets.split(","))
    runs = {run: score_run(run, sets) for run in args.runs}
    names = list(dict.fromkeys(n for cells in runs.values() for c in cells for n in c))
    every = {n: [c[n] for cells in runs.values() for c in cells if n in c] for n in names}
    print("| run | " + " | ".join(names) + " |\n|" + "---|" * (len(names) + 1))
    for run, cells in runs.items():
        rng = [f"{min(c[n] for c in cells):.2f}-{max(c[n] for c in cells):.2f}x" if n in cells[0] else "-"
               for n in names]
        print(f"| {run} | " + " | ".join(rng) + " |")
    print("| **worst** | " + " | ".join(f"{max(every[n]):.2f}x" for n in names) + " |")
    print("| mean | " + " | ".join(f"{np.mean(every[n]):.3f}x" for n in names) + " |")
    print("| over 1.1x, of the cells | " + " | ".join(f"{sum(v > 1.1 for v in every[n])} of {len(every[n])}"
                                                  for n in names) + " |")

if __name__ == "__main__":
    main()
