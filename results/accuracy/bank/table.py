"""The bank study's rows as markdown tables (``study.py``'s JSON files): test MSE and probe mean
R^2 at the reset, trajectory and dataset points, and the seconds every answer took.

    python results/accuracy/bank/table.py results/accuracy/bank/pendulum-angle-expert.json ...
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

COLUMNS = (("test_mse", "test MSE reset"), ("traj_test_mse", "trajectory"), ("data_test_mse", "dataset"),
           ("probe_r2", "probe R^2 reset"), ("traj_probe_r2", "trajectory"), ("data_probe_r2", "dataset"))


def main() -> None:
    for path in sys.argv[1:]:
        rows = json.loads(Path(path).read_text())["rows"]
        print(f"\n{Path(path).stem}\n")
        print("| answer | " + " | ".join(c for _, c in COLUMNS) + " | seconds |")
        print("|---" * (len(COLUMNS) + 2) + "|")
        for label, r in rows.items():
            cells = [f"{r[k]:.3g}" if k in r else "" for k, _ in COLUMNS]
            print(f"| {label} | " + " | ".join(cells) + f" | {r['seconds']} |")


if __name__ == "__main__":
    main()
