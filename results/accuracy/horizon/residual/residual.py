"""The lead the drift study left: choose the expansion's horizon k per reward by G_k's Bellman
residual on the data's own transitions. Scored per held-out reward against the truth.

The trust report keeps, per method and held-out reward, the mean Bellman residual of the answer
on ``trust_points`` transitions (s, a, r, s') of the data (``trust_bellman_each``, in units of the
reward's RMS) and, where the run has an environment, the answers and the truth at those
transitions and at every kind of evaluation points (predictions.npz). For each operator, kind of
points and held-out reward this prints the MSE of

- ``residual``: the k whose G_k has the smallest residual (k = 0 the operator alone),
- ``kauto``: today's choice (``OperatorModel.choose_horizons``, the ensemble's spread and the
  operators' variance), and the fixed k = 0 and k = 400,

over the best fixed k's MSE for that reward (1.00: the best k chosen), then their geometric mean
and worst over the rewards.

    python results/accuracy/horizon/residual/residual.py RUN [RUN ...] > residual.md
"""
import json
import sys
from pathlib import Path

import numpy as np

KINDS = ("trust", "dataset", "reset", "trajectory")


def main() -> None:
    print("| run | operator | points | rule | geometric mean over the best k | worst | per held-out reward |")
    print("|---|---|---|---|---|---|---|")
    for run in map(Path, sys.argv[1:]):
        methods = json.loads((run / "results.json").read_text())["methods"]
        horizons = json.loads((run / "config.json").read_text())["horizons"]
        z = np.load(run / "predictions.npz")
        ops = [m for m in methods if "+" not in m and f"{m}+kauto" in methods and "trust_bellman_each" in methods[m]]
        names = [f"+k{k}" for k in horizons]
        for op in ops:
            cands = [op] + [op + n for n in names]
            each = methods[op]["trust_bellman_each"]
            residual = np.array([[methods[c]["trust_bellman_each"][r][0] for r in each] for c in cands])  # (K, H)
            for kind in KINDS:
                if f"{op}|heldout|{kind}|truth" not in z.files:
                    continue

                def mse(m, kind=kind):
                    return ((z[f"{m}|heldout|{kind}|pred"] - z[f"{m}|heldout|{kind}|truth"]) ** 2).mean(-1)   # (H,)

                err = np.stack([mse(c) for c in cands])                                             # (K, H)
                best = err.min(0)
                picks = {"residual": err[residual.argmin(0), np.arange(err.shape[1])],
                         "kauto": mse(f"{op}+kauto"), "k = 0": err[0], f"k = {horizons[-1]}": err[-1]}
                for rule, e in picks.items():
                    ratio = e / best
                    print(f"| {run.name if run.name not in ('run', 'rerun') else run.parent.name + '/' + run.name} | "
                          f"{op} | {kind} | {rule} | {np.exp(np.log(ratio).mean()):.2f}x | {ratio.max():.2f}x | "
                          + " ".join(f"{x:.2f}" for x in ratio) + " |")


if __name__ == "__main__":
    main()
