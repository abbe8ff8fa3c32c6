"""The default's rollout at 1e4 new points split into its networks (the one-step model's steps and
the policy, each call waited for) and the rest (the rollout's own bookkeeping), warm, a few times:

    python results/answer-times/rollout_split.py runs/main-job-19 [EXPANSION_PY LABEL]

EXPANSION_PY: another version of ``resolvent/algorithms/expansion.py`` to time instead (e.g. one
from ``git show REV:resolvent/algorithms/expansion.py``), for a side-by-side comparison in
separate processes (rollout-split.txt: before and after the bookkeeping change, alternated).
One set of 1e4 of the dataset's state-actions (the benchmark's), k = 400, favor's expansion.
"""
from __future__ import annotations

import importlib.util
import sys
import time

import jax
import numpy as np

import resolvent
import resolvent.algorithms.expansion as expansion
from resolvent.experiments import open_run


def main() -> None:
    run = sys.argv[1]
    module, label = expansion, "this checkout"
    if len(sys.argv) > 2:
        spec = importlib.util.spec_from_file_location("expansion_timed", sys.argv[2])
        module, label = importlib.util.module_from_spec(spec), sys.argv[3]
        sys.modules["expansion_timed"] = module
        spec.loader.exec_module(module)
    _, p = open_run(run)
    model = resolvent.load(run, "favor+k400")
    idx = np.random.default_rng(0).choice(len(p.features["obs"]), 10_000, replace=False)
    obs, act = p.features["obs"][idx], p.features["action"][idx]
    networks = [0.0]

    def waited(f):
        def call(*args):
            t0 = time.perf_counter()
            out = jax.block_until_ready(f(*args))
            networks[0] += time.perf_counter() - t0
            return out
        return call

    module.PROGRESS_ROWS = 1 << 62                       # no progress bar
    module.rollout_step = waited(module.rollout_step)
    policy = waited(model.target_policy)
    module.expand(model.onestep, policy, obs, act, 400)   # compiled
    rows = []
    for _ in range(4):
        networks[0] = 0.0
        t0 = time.perf_counter()
        module.expand(model.onestep, policy, obs, act, 400)
        total = time.perf_counter() - t0
        rows.append((total, networks[0], total - networks[0]))
    cells = "  ".join(f"{t:.2f}/{n:.2f}/{r:.2f}" for t, n, r in rows)
    print(f"{label:>14}: total/networks/rest s {cells}   fastest total {min(r[0] for r in rows):.2f}, "
          f"least rest {min(r[2] for r in rows):.2f}")


if __name__ == "__main__":
    main()
