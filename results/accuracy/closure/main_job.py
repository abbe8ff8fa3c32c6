"""The README main job's expansions before and after the closed cycle: every operator's G_k and
kauto, test MSE at the reset, trajectory and dataset points and probe R^2 (means over seeds),
from two runs' results.json.

    python results/accuracy/closure/main_job.py \
        results/accuracy/pendulum-angle-expert-main-job/rerun-compile-results.json \
        results/accuracy/pendulum-angle-expert-main-job/rerun-close-results.json > main-job.txt
"""
from __future__ import annotations

import json
import sys

import numpy as np

COLUMNS = ("test_mse", "traj_test_mse", "data_test_mse", "probe_r2", "traj_probe_r2", "data_probe_r2")


def main() -> None:
    before, after = (json.load(open(p))["methods"] for p in sys.argv[1:3])
    print(f"before: {sys.argv[1]}\nafter: {sys.argv[2]}\n")
    print("| answer | " + " | ".join(f"{c} before | after" for c in COLUMNS) + " |")
    print("|---|" + "---|---|" * len(COLUMNS))
    for name in (m for m in after if "+k" in m and m in before):
        cells = " | ".join(f"{np.mean(before[name][c]):.4g} | {np.mean(after[name][c]):.4g}" for c in COLUMNS)
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
