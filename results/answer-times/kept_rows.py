"""A new reward's answer at points already rolled out, G_k over every member's rows weighed by
the kept members' weights (before) against the kept members' rows only (``expanded_q`` now: the
reward and the operator at m n of the E n rows), side by side in one process over a run's
models: fb+k400 and favor+k400 (a new reward at 400 steps x 5 members x 1e4 points), median of
3 calls each, interleaved.

    python results/answer-times/kept_rows.py --run RUN > results/answer-times/kept-rows.txt
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rolled_compiled import reward_and_points, seed0   # this folder's: the run's test reward and points

import resolvent
from resolvent.algorithms.expansion import along_q, expanded_q


def every_row(ex, reward, tail, gamma):
    """G_k before: every member's own G_k (the reward and the operator at all E n rows), then their mean."""
    return ex.member_mean(along_q(ex, reward, tail, gamma, (0,))[..., 0, :])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--methods", default="fb+k400,favor+k400")
    args = ap.parse_args()
    (name, reward), obs, act = reward_and_points(args.run, args.pairs)
    print(f"run {args.run}, reward {name}, {len(obs)} points; ms per answer at points already rolled out, "
          f"median of 3 (every row | kept rows)")
    for method in args.methods.split(","):
        model = seed0(resolvent.load(args.run, method))
        model.q_values(reward, obs, act)                                    # the rollout, kept
        ex = model.expansion(obs, act, model.horizon)
        kept = int((ex.weights > 0).sum(0).mean())
        answers, times = {}, {"every row": [], "kept rows": []}
        for _ in range(3):
            for how, answer in (("every row", every_row), ("kept rows", expanded_q)):
                fresh = lambda f: reward(f)                                 # noqa: E731 - a new reward each time
                tail = lambda s, a, r=fresh: model._q(r, s, a)              # noqa: E731 - G[r] at (s_k, pi(s_k))
                t0 = time.perf_counter()
                answers[how] = answer(ex, fresh, tail, model.gamma)
                times[how].append(1e3 * (time.perf_counter() - t0))
        diff = np.abs(answers["every row"] - answers["kept rows"]).max()
        before, after = (statistics.median(times[how]) for how in ("every row", "kept rows"))
        print(f"{method:12s} {before:8.0f} | {after:8.0f}   ({kept} of {ex.weights.shape[0]} members kept per point)"
              f"   max |answer difference| {diff:.2g} (largest answer {np.abs(answers['kept rows']).max():.4g})")


if __name__ == "__main__":
    main()
