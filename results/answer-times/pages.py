"""The default's rollout at 1e4 new points with its arrays in ordinary pages (``expansion.small_pages``,
the package's) and with numpy's default mark for transparent huge pages (``rollout.__wrapped__``),
alternated in one process, warm: wall seconds, user and system CPU seconds, minor page faults:

    python results/answer-times/pages.py runs/main-job-21 [CALLS]

One set of 1e4 of the dataset's state-actions (the benchmark's), k = 400, favor's expansion. The
kernel's settings that decide the difference are printed first.
"""
from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np

import resolvent
import resolvent.algorithms.expansion as expansion
from resolvent.experiments import open_run

THP = Path("/sys/kernel/mm/transparent_hugepage")


def main() -> None:
    run, calls = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 6
    for name in ("enabled", "defrag"):
        print(f"{THP / name}: {(THP / name).read_text().strip() if (THP / name).exists() else '(none)'}")
    _, p = open_run(run)
    model = resolvent.load(run, "favor+k400")
    idx = np.random.default_rng(0).choice(len(p.features["obs"]), 10_000, replace=False)
    obs, act = p.features["obs"][idx], p.features["action"][idx]
    expansion.PROGRESS_ROWS = 1 << 62                                # no progress bar
    small, marked = expansion.rollout, expansion.rollout.__wrapped__
    expansion.expand(model.onestep, model.target_policy, obs, act, 400)   # compiled
    rows = {"ordinary pages (small_pages)": [], "numpy's huge-page mark": []}
    for i in range(2 * calls):
        label = list(rows)[i % 2]
        expansion.rollout = small if i % 2 == 0 else marked
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        expansion.expand(model.onestep, model.target_policy, obs, act, 400)
        wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
        rows[label].append((wall, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt))
    expansion.rollout = small
    for label, got in rows.items():
        cells = "  ".join(f"{w:.2f}/{u:.2f}/{s:.2f}/{f}" for w, u, s, f in got)
        wall = sorted(g[0] for g in got)
        print(f"{label:>29}: wall/user/system s/minor faults  {cells}   median wall {wall[len(wall) // 2]:.2f}")


if __name__ == "__main__":
    main()
