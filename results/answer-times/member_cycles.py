"""Would members entering their cycles one by one save model steps? The rollout stops modelling a
point once every member of it has come back within the tolerance of its state p steps before at
p + 1 steps running (``expansion.cycles``); here the same rule per member alone, counted.

    python results/answer-times/member_cycles.py RUN [--method favor] [--points 10000] > member-cycles.txt

The run's one-step ensemble under pi, 400 steps from ``--points`` of its dataset's state-actions
(the benchmark's), every step modelled (``cycle`` 0), then the step each point (all members) and
each member alone would have entered a cycle (tolerance 1e-4 of the data's state scale, periods up
to ``expansion.CYCLE_PERIOD``): the member-steps modelled each way.
"""
from __future__ import annotations

import argparse

import numpy as np
from rolled_compiled import reward_and_points   # this folder's: the run's test reward and points

from resolvent.algorithms.expansion import CYCLE_PERIOD, expand
from resolvent.experiments import open_run

HORIZON, TOL = 400, 1e-4


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--method", default="favor")
    ap.add_argument("--points", type=int, default=10_000)
    args = ap.parse_args()
    _, obs, act = reward_and_points(args.run, args.points)
    _, p = open_run(args.run)
    model = p.expansion_model(f"{args.run}/models", args.method)
    every = model.onestep._replace(cycle=0.0)
    ex = expand(every, model.target_policy, obs, act, HORIZON)
    e, n, ds = every.members, len(obs), obs.shape[1]
    states = np.concatenate([ex.steps["obs"], ex.obs[None]]).reshape(HORIZON + 1, e, n, ds) / every.x_std[:ds]
    member, point = np.full((e, n), HORIZON), np.full(n, HORIZON)                      # entry steps
    held_m, held_p = np.zeros((CYCLE_PERIOD + 1, e, n), int), np.zeros((CYCLE_PERIOD + 1, n), int)
    for t in range(1, HORIZON + 1):
        for q in range(1, min(CYCLE_PERIOD, t) + 1):
            d = np.sqrt(((states[t] - states[t - q]) ** 2).sum(-1))                    # (E, n)
            held_m[q] = np.where(d <= TOL, held_m[q] + 1, 0)
            held_p[q] = np.where(d.max(0) <= TOL, held_p[q] + 1, 0)
            member = np.where((member == HORIZON) & (held_m[q] >= q + 1), t, member)
            point = np.where((point == HORIZON) & (held_p[q] >= q + 1), t, point)
    print(f"{args.run} {args.method}, {n} points, {e} members, 400 steps, tolerance {TOL:g}:")
    print(f"  all members together: {point.sum() * e} member-steps modelled (a point's entry at step "
          f"{point.mean():.1f} on average; {int((point == HORIZON).sum())} never)")
    print(f"  each member on its own: {member.sum()} member-steps (entry at {member.mean():.1f}), "
          f"{member.sum() / (point.sum() * e):.3f} of the above")


if __name__ == "__main__":
    main()
