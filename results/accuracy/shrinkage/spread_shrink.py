"""James-Stein shrinkage of an expansion's answer toward its points' mean, the noise read from the
run alone: a = max(0, 1 - c e / Var_points(Q)), e the one-step ensemble's spread of the k-step sums
at each point (``horizon.point_spread``, kauto's e_model), averaged over the points; beside the
truth's best a (``oracle_shrink.py``); and, as a noise that sees the members' shared bias, the
model's error along stretches of the data (``horizon.model_errors``: the kept members' mean k-step
sum from a stretch's first state, pi's actions moved by the data's deviation from pi, against the
data's own sum; ``STRETCHES`` of them). On a fresh HalfCheetah-Vel replay run with its models and a
per-reward FQE oracle on the probes at the same points (the answers here made by
``resolvent.load`` at the truth's own points):

    resolvent evaluate halfcheetah-vel --dataset replay --methods favor,fb --seeds 1 --out runs/hc-replay-js
    resolvent evaluate halfcheetah-vel --dataset replay --methods fqe --oracle-rewards probe --seeds 1 \\
        --out runs/hc-replay-js-oracle
    python results/accuracy/shrinkage/spread_shrink.py runs/hc-replay-js runs/hc-replay-js-oracle \\
        > results/accuracy/shrinkage/spread-shrink.txt
"""
from __future__ import annotations

import sys

import numpy as np
from oracle_shrink import best_shrink, shrunk_mse

import resolvent
from resolvent.algorithms.horizon import find_stretches, model_errors, point_spread, validate
from resolvent.experiments.problem import open_run

SCALES = (1.0, 3.0, 10.0)   # c: the spread taken as c times the answer's noise
STRETCHES = 256             # stretches of the data for the model's own error


def main(run: str, oracle: str, method: str = "favor+k400") -> None:
    _, p = open_run(run)
    o = np.load(f"{oracle}/predictions.npz")
    model = resolvent.load(run, method)
    stretches = find_stretches(p.features, model.horizon, STRETCHES, 0)
    along = validate(model.onestep, model.target_policy, stretches)
    print(f"{method}'s MSE over per-reward FQE's: alone, shrunk with the ensemble's spread as c x its noise, and "
          f"by the truth's best a\n")
    print(f"{'points':10s} {'probe':18s} {'alone':>6s} {'e/var':>8s} "
          + " ".join(f"{f'a(c={c:g})':>8s} {'MSE':>6s}" for c in SCALES) + f" {'e_data/var':>10s} {'a':>5s} {'MSE':>6s}"
          f" {'best a':>7s} {'MSE':>6s}")
    for kind, gt in p.source.points.items():
        obs, act = np.asarray(gt.obs0), np.asarray(gt.action0)
        rollout = model.expansion(obs, act, model.horizon)
        for i, (name, r) in enumerate(p.source.rewards["probe"]):
            q = np.asarray(model.q_values(r, obs, act, seed=None)).mean(0)                 # (n,)
            e = point_spread(rollout, r, [model.horizon], model.gamma)[0].mean()
            t, f = o[f"fqe|probe|{kind}|truth"][i], o[f"fqe|probe|{kind}|pred"][i]
            fm = ((f - t) ** 2).mean()
            line = f"{kind:10s} {name:18s} {((q - t) ** 2).mean() / fm:6.2f} {e / q.var():8.3g}"
            for c in SCALES:
                a = max(0.0, 1 - c * e / q.var())
                line += f" {a:8.2f} {shrunk_mse(q, t, a) / fm:6.2f}"
            e_data = model_errors(along, stretches, r, [model.horizon], model.gamma)[0]
            a = max(0.0, 1 - e_data / q.var())
            line += f" {e_data / q.var():10.3g} {a:5.2f} {shrunk_mse(q, t, a) / fm:6.2f}"
            a, shrunk = best_shrink(q, t)
            print(line + f" {a:7.2f} {shrunk / fm:6.2f}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
