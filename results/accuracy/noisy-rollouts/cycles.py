"""A noisy rollout's copies and the closed loop's cycles (``expansion.rollout``'s ``cycle``): a
copy whose every member has come back within the one-step model's ``cycle`` (1e-4 of the data's
state scale) of its state p steps before, at p + 1 steps running, repeats that cycle without the
model (nor noise) from there, as the exact rollout does. Each step's noise, c ||sigma / x_std||, is
below that tolerance at c = 0.1 on Pendulum and above it at c = 0.3. A trial allowance lifts it by
K times the noise (tolerance cycle + K c ||sigma / x_std||, K = 0: the product's own), wrapped
around ``expansion.cycles`` here alone. Each row: one kind of points, one setting cxR (noise c, R
copies; ``exact``: the exact rollout with its cycles) and K; the probes' geometric-mean MSE against
the run's truth, the model steps a row took (of the expansion's k) and the share of rows that ended
in a cycle.

    resolvent evaluate pendulum-angle --out runs/main-job
    python results/accuracy/noisy-rollouts/cycles.py runs/main-job favor+k400 0.1x16,0.3x16 0,1,3,10 \\
        > results/accuracy/noisy-rollouts/cycles.txt
"""
from __future__ import annotations

import sys

import numpy as np

import resolvent
from resolvent.algorithms import expansion
from resolvent.algorithms.onestep import residual_std
from resolvent.experiments.problem import open_run

CYCLES = expansion.cycles   # the product's cycle test, tolerance ``cycle`` alone


def allowing(extra: float) -> None:
    """The rollouts' cycle test from here on: its tolerance lifted by ``extra``."""
    expansion.cycles = lambda t, scaled, live, e, tol, held: CYCLES(t, scaled, live, e, tol + extra, held)


def main(run: str, method: str, spec: str, ks: str) -> None:
    _, p = open_run(run)
    model = resolvent.load(run, method)
    base = model.onestep._replace(residual=residual_std(model.onestep, p.features))
    step = float(np.linalg.norm(base.residual / np.asarray(base.x_std[:len(base.residual)])))   # ||sigma / x_std||
    rewards = p.source.rewards["probe"]
    settings = [("exact", 0.0, 1, [0.0])] + [(x, float(x.split("x")[0]), int(x.split("x")[1]),
                                             [float(k) for k in ks.split(",")]) for x in spec.split(",")]
    print(f"{run}, {method}: the probes' geometric-mean MSE, the model steps a row took and the rows "
          f"in a cycle, by the cycle's noise allowance K (cycle {base.cycle:g}, ||sigma / x_std|| {step:.3g})\n")
    print(f"{'points':10s} {'setting':8s} {'K':>4s} {'geo MSE':>9s} {'steps':>7s} {'cycled':>7s}")
    for kind, gt in p.source.points.items():
        obs, act = np.asarray(gt.obs0), np.asarray(gt.action0)
        truth = np.stack([gt.q(r) for _, r in rewards])                                 # (probes, n)
        for name, c, copies, allowances in settings:
            for k in allowances:
                allowing(k * c * step)
                model.onestep = base._replace(noise=c, copies=copies)
                model.rollouts._last = None
                q = np.stack([np.asarray(model.q_values(r, obs, act, seed=None)).mean(0) for _, r in rewards])
                ex = model.rollouts._last[1]
                first = np.full(1, ex.horizon) if ex.repeats is None else ex.repeats.first       # (E R n,)
                geo = np.exp(np.log(((q - truth) ** 2).mean(1)).mean())
                print(f"{kind:10s} {name:8s} {k:4g} {geo:9.3g} {first.mean():7.1f} {(first < ex.horizon).mean():7.2f}",
                      flush=True)
        print()
    expansion.cycles = CYCLES


if __name__ == "__main__":
    main(*sys.argv[1:])
