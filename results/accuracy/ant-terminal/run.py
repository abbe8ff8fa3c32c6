"""The Ant-Dir expert grid's seed-0 run (``--seed N``: seed N's) again, with Ant's termination rule
(or, with --no-rule, without it: the grid's configuration as committed).

    python results/accuracy/ant-terminal/run.py runs/ant-expert-rule
    python results/accuracy/ant-terminal/run.py runs/ant-expert-base --no-rule
    python results/accuracy/ant-terminal/run.py runs/ant-expert-rule-1 --seed 1
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from resolvent.experiments.evaluate import EvaluateConfig, run_evaluate

GRID = Path(__file__).resolve().parents[2] / "ope-operators" / "ant-dir-expert"   # seed-N/config.json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--no-rule", action="store_true", help="the grid's configuration as it is")
    ap.add_argument("--seed", type=int, default=0, help="the grid's seed whose configuration is run")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()
    cfg = EvaluateConfig.from_dict(json.loads((GRID / f"seed-{args.seed}" / "config.json").read_text()))
    if not args.no_rule:
        cfg = dataclasses.replace(cfg, terminal="resolvent.endings:ant")
    run_evaluate(cfg, args.out, resume=args.resume)


if __name__ == "__main__":
    main()
