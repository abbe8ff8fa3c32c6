"""One process: a new reward's answer at 1e4 new points (the rollout included) and at points
already rolled out, for favor+k400 and fb+k400 of a finished run, network seed 0; and the
operator alone at the same points. Each a new reward object, warm.

    python results/accuracy/closure/timing.py runs/main-job-15 2>/dev/null
    (cd OLD_CHECKOUT && PYTHONPATH=. python /path/to/timing.py /path/to/runs/main-job-15)   # the code before
"""
from __future__ import annotations

import dataclasses
import statistics
import sys
import time

import jax
import numpy as np

import resolvent
from resolvent.experiments.problem import open_run


def fresh(reward):
    """The same reward as a new object: nothing held for it along the rollout."""
    return lambda *a, **k: reward(*a, **k)


def seconds(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main() -> None:
    run = sys.argv[1]
    _, p = open_run(run)
    name, reward = p.source.rewards["test"][0]
    rng = np.random.default_rng(0)
    sets = [rng.choice(len(p.x), 10000, replace=False) for _ in range(4)]
    truth = np.asarray(p.sets["test"].truth["reset"][0])
    for method in ("favor", "fb"):
        m = resolvent.load(run, f"{method}+k400")
        m = dataclasses.replace(m, params=jax.tree_util.tree_map(lambda a: a[:1], m.params))
        new = [seconds(lambda: m.q_values(fresh(reward), p.features["obs"][i], p.features["action"][i], horizon=400))
               for i in sets]
        obs, act = p.features["obs"][sets[-1]], p.features["action"][sets[-1]]
        rolled = [seconds(lambda: m.q_values(fresh(reward), obs, act, horizon=400)) for _ in range(6)]
        m.q_values(fresh(reward), obs, act, horizon=0)
        alone = [seconds(lambda: m.q_values(fresh(reward), obs, act, horizon=0)) for _ in range(5)]
        mse = float(np.mean((m.q_values(reward, p.source.gt.obs0, p.source.gt.action0, horizon=400) - truth) ** 2))
        print(f"{method}+k400: new points {[round(x, 2) for x in new]} s (median of the last 3 "
              f"{statistics.median(new[1:]):.2f}); rolled {statistics.median(rolled[1:]) * 1e3:.0f} ms "
              f"({[round(1e3 * x) for x in rolled]}); operator alone {statistics.median(alone) * 1e3:.1f} ms; "
              f"MSE {mse:.4g} ({name})", flush=True)


if __name__ == "__main__":
    main()
