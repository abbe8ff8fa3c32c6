"""What the default's answer at new points costs, row by row: the rows its rollout steps (the
one-step model and the policy at every member's state, padded to powers of two) and what one
model step and one policy call cost per row on this machine, so the networks' floor.

    python results/answer-times/rollout_rows.py runs/main-job-17 > results/answer-times/rollout-rows.txt

One new set of 1e4 of the dataset's state-actions (the benchmark's), k = 400, favor's expansion
(every operator's rollout is the same).
"""
from __future__ import annotations

import sys
import time

import numpy as np

import resolvent.algorithms.expansion as expansion
from resolvent.algorithms.onestep import rollout_step
from resolvent.experiments import open_run


def per_row(f, rows: int, repeats: int = 10) -> float:
    """Seconds per row of ``f`` (warm: one call first)."""
    f()
    t0 = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t0) / repeats / rows


def main() -> None:
    run = sys.argv[1]
    cfg, p = open_run(run)
    model = p.expansion_model(f"{run}/models", "favor")
    idx = np.random.default_rng(0).choice(len(p.features["obs"]), 10_000, replace=False)
    obs, act = p.features["obs"][idx], p.features["action"][idx]
    padded, real = [], []
    step, cycles = expansion.rollout_step, expansion.cycles

    def counted_step(m, o, a):
        padded.append(len(o))
        return step(m, o, a)

    def counted_cycles(t, states, live, *rest):
        real.append(len(live))
        return cycles(t, states, live, *rest)

    expansion.rollout_step, expansion.cycles = counted_step, counted_cycles
    try:
        t0 = time.perf_counter()
        expansion.expand(model.onestep, model.target_policy, obs, act, 400)
        seconds = time.perf_counter() - t0
    finally:
        expansion.rollout_step, expansion.cycles = step, cycles
    e = model.onestep.members
    n_real, n_padded = e * sum(real), sum(padded)
    print(f"rollout of 1e4 new points, k = 400: {seconds:.2f} s (its first call: compilations included), "
          f"{len(padded)} model steps")
    print(f"rows stepped: {n_padded:,} padded, {n_real:,} real ({e} members, {n_real / len(obs):.0f} a point)")
    rng = np.random.default_rng(1)
    for rows in (5_120, 20_480, 50_000):
        s = rng.normal(size=(rows, obs.shape[1])).astype(np.float32)
        a = rng.normal(size=(rows, act.shape[1])).astype(np.float32)
        m = per_row(lambda: {k: np.asarray(v) for k, v in rollout_step(model.onestep, s, a).items()}, rows)
        pi = per_row(lambda: model.target_policy(s), rows)
        print(f"{rows:>6} rows a call: model step {1e6 * m:.3f} us a row ({1e-6 / m:.2f} Mrows/s), "
              f"policy {1e6 * pi:.3f} us a row ({1e-6 / pi:.2f} Mrows/s)")
        if rows == 50_000:
            print(f"so the networks alone at the padded rows: {n_padded * (m + pi):.2f} s, at the real rows "
                  f"{n_real * (m + pi):.2f} s")


if __name__ == "__main__":
    main()
