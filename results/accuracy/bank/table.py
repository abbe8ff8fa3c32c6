"""The bank study's rows as markdown tables (``study.py``'s JSON files): test MSE (a dataset of
one's own: its reward's) and probe mean R^2 at the reset, trajectory and dataset points, and the
seconds every answer took.

    python results/accuracy/bank/table.py results/accuracy/bank/pendulum-angle-expert.json ...
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

def columns(rows: dict) -> tuple:
    """The family's test rewards' MSE, or a dataset of one's own's reward's (its training set)."""
    s, what = ("test", "test MSE") if any("test_mse" in r for r in rows.values()) else ("train", "own reward MSE")
    return ((f"{s}_mse", f"{what} reset"), (f"traj_{s}_mse", "trajectory"), (f"data_{s}_mse", "dataset"),
            ("probe_r2", "probe R^2 reset"), ("traj_probe_r2", "trajectory"), ("data_probe_r2", "dataset"))


def main() -> None:
    for path in sys.argv[1:]:
        rows = json.loads(Path(path).read_text())["rows"]
        cols = columns(rows)
        print(f"\n{Path(path).stem}\n")
        print("| answer | " + " | ".join(c for _, c in cols) + " | seconds |")
        print("|---" * (len(cols) + 2) + "|")
        for label, r in rows.items():
            cells = [f"{r[k]:.3g}" if k in r else "" for k, _ in cols]
            print(f"| {label} | " + " | ".join(cells) + f" | {r['seconds']} |")


if __name__ == "__main__":
    main()
