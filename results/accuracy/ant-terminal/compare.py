"""Ant-Dir expert with and without Ant's termination rule: test and probe R^2 of each answer at
the three kinds of points, from runs' results.json (the same configuration and seed but for the
rule; the grid's seed 0 for reference).

    python results/accuracy/ant-terminal/compare.py RUN_WITHOUT RUN_WITH [REFERENCE]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

KINDS = {"reset": "", "trajectory": "traj_", "dataset": "data_"}
METHODS = ("favor", "fb", "favor+k60", "favor+k400", "favor+kauto", "fb+k60", "fb+k400", "fb+kauto")


def table(runs: dict[str, Path]) -> str:
    res = {name: json.loads((run / "results.json").read_text())["methods"] for name, run in runs.items()}
    head = " | ".join(f"{k} test / probe" for k in KINDS)
    lines = [f"| answer | run | {head} |", "|---|---|" + "---|" * len(KINDS)]
    for method in METHODS:
        for name, methods in res.items():
            if method not in methods:
                continue
            m = methods[method]
            cells = [f"{m[p + 'test_r2'][0]:.3f} / {m[p + 'probe_r2'][0]:.3f}" for p in KINDS.values()]
            lines.append(f"| {method} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("without", type=Path)
    ap.add_argument("with_", type=Path)
    ap.add_argument("reference", type=Path, nargs="?")
    args = ap.parse_args()
    runs = {"without the rule": args.without, "with the rule": args.with_}
    if args.reference:
        runs["the grid's seed 0"] = args.reference
    print("R^2 against the Monte-Carlo truth (test rewards / probe mean), one network seed\n")
    print(table(runs))


if __name__ == "__main__":
    main()
