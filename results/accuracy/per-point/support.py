"""Where the expansion's rollout leaves the data: a per-point signal, no ground truth, on finished runs.

    python results/accuracy/per-point/support.py RUN [RUN ...] > results/accuracy/per-point/support.txt

At each ground-truth point of a run the rollout of OPERATOR+k400 (the run's one-step model under
pi, the members the answer keeps) is followed for its first ``STEPS`` steps, and each step's
(s_t, pi(s_t)) is placed against the data's (s, a) (in the one-step model's input scale):

    leaves(s, a) = sum_e w_e max_{t < STEPS} min_i || (s^e_t, pi(s^e_t)) - (s_i, a_i) ||

The scale it is read on is the data's own: the distance from each of 4,000 data pairs to its
nearest other pair (``LOO``). Printed per run: those distances' quantiles; per kind of points the
signal's quantiles; for the test and probe rewards the MSE of the operator alone, of the long
expansion, and of "the operator alone where leaves > tau, the long expansion elsewhere" (reward-
free per point, so linear in r) for tau the data's 99.9th percentile and largest LOO distance
(over the better single answer's MSE); and the six points farthest out, with each answer's error
(the test rewards' squared error over their variance across the points) and the operators'
disagreement there (OPERATOR alone against the run's other operators on the training rewards,
the same measure): the second condition a rule would need.
"""
from __future__ import annotations

import sys

import numpy as np
from scipy.spatial import cKDTree

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir, prepare

OPERATOR, LONG, STEPS, SAMPLE = "favor", 400, 10, 4000


def spread(a: np.ndarray, b: np.ndarray, var: np.ndarray) -> np.ndarray:
    """(n,) mean over rewards of (a - b)^2 over each reward's variance: a, b (R, n), var (R, 1)."""
    return ((a - b) ** 2 / var).mean(0)


def report(run: str) -> None:
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    p = prepare(cfg)
    z = np.load(f"{run}/predictions.npz")
    model = resolvent.load(run, f"{OPERATOR}+k{LONG}")
    mean, std = np.asarray(model.onestep.x_mean), np.asarray(model.onestep.x_std)   # (ds + da,)
    data = (np.concatenate([p.features["obs"], p.features["action"]], 1) - mean) / std  # (N, ds + da)
    tree = cKDTree(data)
    sample = data[np.random.default_rng(0).choice(len(data), min(SAMPLE, len(data)), replace=False)]
    loo = tree.query(sample, 2)[0][:, 1]                                              # (SAMPLE,)
    taus = {"99.9%": np.quantile(loo, 0.999), "max": loo.max()}
    others = [m for m in cfg.methods if m not in ("fqe", OPERATOR) and "+" not in m]
    print(f"## {run} ({cfg.family} {cfg.dataset}; {OPERATOR} alone against {OPERATOR}+k{LONG})\n")
    print(f"data: {len(data)} pairs of {data.shape[1]} dims; nearest-other distances, quantiles 50 / 90 / 99 / "
          f"99.9% / max: {' / '.join(f'{q:.2f}' for q in np.quantile(loo, [0.5, 0.9, 0.99, 0.999, 1.0]))}\n")
    for kind, gt in p.source.points.items():
        n = len(gt.obs0)
        ex = model.expansion(gt.obs0, gt.action0, LONG)
        e = ex.weights.shape[0]
        sa = np.concatenate([ex.steps["obs"][:STEPS], ex.steps["action"][:STEPS]], -1)   # (T, E n, ds + da)
        far = tree.query(((sa - mean) / std).reshape(-1, sa.shape[-1]))[0].reshape(STEPS, e, n)
        leaves = (far.max(0) * ex.weights).sum(0)                                          # (n,)
        quantiles = " / ".join(f"{q:.2f}" for q in np.quantile(leaves, [0.5, 0.9, 1]))
        print(f"{kind} ({n} points): leaves, quantiles 50 / 90 / max {quantiles}")
        for s in ("test", "probe"):
            t = z[f"{OPERATOR}|{s}|{kind}|truth"]                                          # (R, n)
            q0, ql = z[f"{OPERATOR}|{s}|{kind}|pred"], z[f"{OPERATOR}+k{LONG}|{s}|{kind}|pred"]
            best = min(((q0 - t) ** 2).mean(), ((ql - t) ** 2).mean())
            rules = " ".join(f"tau {name} ({tau:.2f}, {(leaves > tau).sum()} points) "
                             f"{((np.where(leaves > tau, q0, ql) - t) ** 2).mean() / best:.2f}x;"
                             for name, tau in taus.items())
            print(f"  {s:>5}: MSE {OPERATOR} {((q0 - t) ** 2).mean():.3g}, +k{LONG} {((ql - t) ** 2).mean():.3g}; "
                  f"the operator where leaves > tau: {rules}")
        t = z[f"{OPERATOR}|test|{kind}|truth"]
        var = t.var(1, keepdims=True) + 1e-12
        train = {m: z[f"{m}|train|{kind}|pred"] for m in [OPERATOR, f"{OPERATOR}+k{LONG}", *others]}
        tvar = train[OPERATOR].var(1, keepdims=True) + 1e-12
        apart = np.mean([spread(train[OPERATOR], train[m], tvar) for m in others], 0) if others else np.zeros(n)
        err0 = spread(z[f"{OPERATOR}|test|{kind}|pred"], t, var)
        errl = spread(z[f"{OPERATOR}+k{LONG}|test|{kind}|pred"], t, var)
        print(f"  farthest out: point, leaves, error {OPERATOR} / +k{LONG}, the operators' disagreement "
              f"(median over the points {np.median(apart):.3f})")
        for i in np.argsort(-leaves)[:6]:
            print(f"    {i:3d}  {leaves[i]:5.2f}  {err0[i]:7.3f} / {errl[i]:7.3f}  {apart[i]:7.3f}")
    print()


if __name__ == "__main__":
    for run in sys.argv[1:]:
        report(run)
