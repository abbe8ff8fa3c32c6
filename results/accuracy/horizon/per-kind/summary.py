"""The table of per-kind.md from kind_choice.py's rows: for each run, kind of points, reward set
and operator, the mean MSE over the set of kauto chosen over all kinds at once, chosen per kind,
and k = 400, each over the best fixed k in hindsight (per reward); their geometric means.

    python results/accuracy/horizon/per-kind/summary.py results/accuracy/horizon/per-kind/*.jsonl
"""
import json
import sys
from pathlib import Path

import numpy as np

rows_out = []
for f in sys.argv[1:]:
    rows = [json.loads(line) for line in open(f) if line.strip()]
    ops = [k for k in rows[0] if isinstance(rows[0][k], dict)]
    for kind in ("reset", "trajectory", "dataset"):
        for s in ("test", "probe"):
            sel = [r for r in rows if r["kind"] == kind and r["set"] == s]
            for op in (ops if sel else []):
                best = np.mean([min(r[op].values()) for r in sel])
                ratio = [np.mean([r[op][str(pick(r))] for r in sel]) / best
                         for pick in (lambda r: r["k_all"], lambda r: r["k_kind"], lambda r: 400)]
                rows_out.append((Path(f).stem, kind, s, op, len(sel), *ratio))
a, b, c = (np.array([r[i] for r in rows_out]) for i in (5, 6, 7))
geo = lambda v: float(np.exp(np.log(v).mean()))  # noqa: E731
print(f"{len(rows_out)} (run, kind, set, operator). Mean MSE over the best fixed k's, geometric mean: "
      f"all kinds at once {geo(a):.3f}, per kind {geo(b):.3f}, k = 400 {geo(c):.3f}; worst {a.max():.2f}, "
      f"{b.max():.2f}, {c.max():.2f}; within 1.1x of the best: {(a <= 1.1).sum()}, {(b <= 1.1).sum()}, "
      f"{(c <= 1.1).sum()}; per kind lower than all at once in {(b < a * 0.99).sum()}, higher in "
      f"{(b > a * 1.01).sum()}.\n")
print("| run | points | set | operator | rewards | all kinds at once | per kind | k = 400 |")
print("|---|---|---|---|---|---|---|---|")
for r in rows_out:
    print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:.2f} | {r[6]:.2f} | {r[7]:.2f} |")
