"""Every probe MSE of members.py's JSON lines over the FQE oracle run's, per line: how many within
1.5x, the worst and the median ratio.

    python results/accuracy/ensemble/members_summ.py members.jsonl ORACLE_RUN
"""
from __future__ import annotations

import argparse
import json

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows")
    ap.add_argument("oracle")
    args = ap.parse_args()
    with open(args.rows) as f:
        rows = [json.loads(line) for line in f]
    z = np.load(f"{args.oracle}/predictions.npz")
    oracle = {kind: ((z[f"fqe|probe|{kind}|pred"] - z[f"fqe|probe|{kind}|truth"]) ** 2).mean(1)
              for kind in ("trajectory", "dataset", "reset")}
    for r in rows:
        ratio = np.array(list(r["mse"].values())) / oracle[r["points"]]
        print(f'{r["model"]:8s} {r["method"]:5s} k={r["k"]} {r["points"]:10s} within1.5x '
              f'{int((ratio <= 1.5).sum())}/{len(ratio)} worst {ratio.max():.2f} median {np.median(ratio):.2f}')


if __name__ == "__main__":
    main()
