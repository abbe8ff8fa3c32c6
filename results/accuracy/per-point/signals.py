"""Where a short expansion errs and a long one does not: per-point signals, no ground truth, on one run.

    python results/accuracy/per-point/signals.py RUN [OPERATOR] [SHORT] [LONG] > results/accuracy/per-point/NAME.txt

At each ground-truth point of the run (reset, trajectory, dataset) the gap between the short and
the long expansion's errors, mean over the test and probe rewards of (err_short^2 - err_long^2)
over the rewards' truth variance, against four reward-free signals computed at the point:

- ``data``: how far the long rollout's kept members go from the data, the largest over the first
  SHORT steps of the distance to the nearest dataset state (in the data's state scale);
- ``members``: the members' distances summed over the first SHORT steps (``Expansion.apart``, what
  the member weights rank), mean over the kept members;
- ``horizons``: the short and the long expansion's disagreement on the run's training rewards
  (their squared difference over each reward's variance across the points, mean over rewards);
- ``operators``: the operators' disagreement at the short horizon (OPERATOR+kSHORT against every
  other operator's, the same measure).

Printed: each signal's Spearman correlation with the gap, and what a per-point rule "the long
expansion where the signal is in its top q of the points, the short one elsewhere" does to the
MSE (over the better single answer's), q = 10, 25, 50%.
"""
from __future__ import annotations

import sys

import numpy as np
from scipy.spatial import cKDTree
from scipy.stats import spearmanr

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir, prepare


def disagreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(n,) mean over rewards of (a - b)^2 over each reward's variance across the points: a, b (R, n)."""
    return ((a - b) ** 2 / (0.5 * (a.var(1, keepdims=True) + b.var(1, keepdims=True)) + 1e-12)).mean(0)


def main() -> None:
    run = sys.argv[1]
    op, short, long = (sys.argv[2:5] + ["favor", "60", "400"][len(sys.argv[2:5]):])
    short, long = int(short), int(long)
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    p = prepare(cfg)
    z = np.load(f"{run}/predictions.npz")
    model = resolvent.load(run, f"{op}+k{long}")
    scale = np.asarray(model.onestep.x_std[:p.features["obs"].shape[1]])
    tree = cKDTree(p.features["obs"] / scale)
    others = [m for m in cfg.methods if m not in ("fqe", op)]
    sets = [s for s in ("test", "probe") if f"{op}+k{short}|{s}|dataset|pred" in z.files] or ["train"]
    print(f"run {run}: {op}+k{short} against {op}+k{long}; rewards {', '.join(sets)}; signals' Spearman with the "
          f"gap (err_short^2 - err_long^2, normalised), and the MSE of 'long where the signal is in its top q' over "
          f"the better single answer's")
    for kind, gt in p.source.points.items():
        n = len(gt.obs0)
        gap, mse = np.zeros(n), {}
        for s in sets:
            truth = z[f"{op}+k{short}|{s}|{kind}|truth"]                                    # (R, n)
            qs, ql = z[f"{op}+k{short}|{s}|{kind}|pred"], z[f"{op}+k{long}|{s}|{kind}|pred"]
            var = truth.var(1, keepdims=True) + 1e-12
            gap += (((qs - truth) ** 2 - (ql - truth) ** 2) / var).mean(0) / len(sets)
            mse[s] = (qs, ql, truth, var)
        ex = model.expansion(gt.obs0, gt.action0, long)
        e = ex.weights.shape[0]
        states = ex.steps["obs"][:short].reshape(short, e, n, -1)                          # (k, E, n, ds)
        far = tree.query((states / scale).reshape(-1, states.shape[-1]))[0].reshape(short, e, n)
        w = ex.weights                                                                       # (E, n)
        signals = {"data": (far.max(0) * (w > 0)).max(0),
                   "members": (ex.apart[short] * w).sum(0),
                   "horizons": disagreement(z[f"{op}+k{short}|train|{kind}|pred"],
                                            z[f"{op}+k{long}|train|{kind}|pred"]),
                   "operators": np.mean([disagreement(z[f"{op}+k{short}|train|{kind}|pred"],
                                                      z[f"{m}+k{short}|train|{kind}|pred"]) for m in others], 0)
                   if others else np.zeros(n)}
        best = {s: min(((qs - t) ** 2).mean(), ((ql - t) ** 2).mean()) for s, (qs, ql, t, _) in mse.items()}
        single = " ".join(f"{s} short {((qs - t) ** 2).mean() / best[s]:.2f}x "
                          f"long {((ql - t) ** 2).mean() / best[s]:.2f}x" for s, (qs, ql, t, _) in mse.items())
        print(f"{kind:>10} ({n} points; {single})")
        for name, sig in signals.items():
            rho = spearmanr(sig, gap)[0] if np.ptp(sig) > 0 else float("nan")
            rules = []
            for q in (0.1, 0.25, 0.5):
                use_long = sig >= np.quantile(sig, 1 - q)
                rules.append(" ".join(f"{((np.where(use_long, ql, qs) - t) ** 2).mean() / best[s]:.2f}x"
                                      for s, (qs, ql, t, _) in mse.items()))
            print(f"{'':>10} {name:>10}: Spearman {rho:6.2f}; long at its top 10% / 25% / 50%: {' | '.join(rules)}")


if __name__ == "__main__":
    main()
