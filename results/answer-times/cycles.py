"""Where a run's rollouts under pi end up, and what repeating their cycles costs in accuracy.

    python results/answer-times/cycles.py RUN [--points 10000] [--horizon 400] > cycles.txt

For 1e4 of the dataset's state-actions (the benchmark's, ``benchmarks/zero_shot.py``): the
expansion's rollout with every step modelled (``onestep.cycle`` 0), then for each period p and
tolerance the share of the model's steps left if a point stopped calling the model once every
member had come back within the tolerance (the data's state scale) of its state p steps before at
p + 1 steps running (``expansion.cycles``'s rule, any single p); then the answer of
``METHOD+kK`` for the run's first test reward, at those points and at the reset points, for each
tolerance: its time, MSE against the truth, and how far it moves from every step modelled (one
call each, in the order given: the first with cycles on also compiles the model for the rolling
points' sizes, a power of two each, so the committed table's 1e-4 row, after 1e-5's, is warm).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from rolled_compiled import benchmark_problem, points_of   # this folder's: the run's test reward and points

import resolvent
from resolvent.algorithms.expansion import expand


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--method", default="favor")
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--horizon", type=int, default=400)
    ap.add_argument("--tolerances", default="0,1e-5,1e-4,1e-3")
    args = ap.parse_args()
    p = benchmark_problem(args.run)
    (name, reward), obs, act = points_of(p, args.points)
    truth, gt = np.asarray(p.sets["test"].truth["reset"][0]), p.source.gt
    model = resolvent.load(args.run, f"{args.method}+k{args.horizon}")
    own, k = model.onestep, args.horizon

    ex = expand(own._replace(cycle=0.0), model.target_policy, obs, act, k)
    states = np.concatenate([ex.steps["obs"], ex.obs[None]])                            # (k + 1, E n, ds)
    e, n = own.members, len(obs)
    z = (states / np.asarray(own.x_std[:states.shape[-1]])).reshape(k + 1, e, n, -1)   # (k + 1, E, n, ds)
    step = np.sqrt(((z[-1] - z[-2]) ** 2).sum(-1)).max(0)                              # (n,) the last step's move
    print(f"{args.run}: {n} points, {e} members, {k} steps; the last step moves every point by "
          f"{step.min():.3g} to {step.max():.3g} (the data's state scale)")
    print("period  tolerance  points settled  model steps left")
    for period in (1, 2, 3, 4, 6, 8):
        back = np.sqrt(((z[period:] - z[:-period]) ** 2).sum(-1)).max(1)               # (k + 1 - p, n)
        for tol in (1e-3, 1e-4, 1e-5):
            below = back <= tol
            held = np.all([below[j:len(below) - period + j] for j in range(period + 1)], 0)   # p + 1 running
            first = np.where(held.any(0), held.argmax(0) + 2 * period, k)                 # the step it settles
            print(f"{period:6d}  {tol:9.0e}  {np.mean(first < k):14.3f}  {np.minimum(first, k).mean() / k:16.3f}")

    print(f"\n{args.method}+k{k} for {name}: answer at the {n} points (rollout and reward), MSE at the reset points")
    print("tolerance  answer s  MSE      max |dQ| reset  max |dQ| points  mean |Q|")
    ref = None
    for tol in (float(t) for t in args.tolerances.split(",")):
        model.onestep = own._replace(cycle=tol)
        t0 = time.perf_counter()
        q_new = model.q_values(reward, obs, act, horizon=k)
        seconds = time.perf_counter() - t0
        q = model.q_values(reward, gt.obs0, gt.action0, horizon=k)
        ref = ref or (q, q_new)
        print(f"{tol:9.0e}  {seconds:8.2f}  {np.mean((q - truth) ** 2):.5f}  {np.abs(q - ref[0]).max():14.3g}  "
              f"{np.abs(q_new - ref[1]).max():15.3g}  {np.abs(ref[1]).mean():8.1f}")


if __name__ == "__main__":
    main()
