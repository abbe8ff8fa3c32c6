"""Every probe MSE of members.py's JSON lines over the FQE oracle run's: python members_summ.py members.jsonl ORACLE_RUN."""
import json, sys
import numpy as np
rows = [json.loads(l) for l in open(sys.argv[1])]
o = {}

z = np.load(f"{sys.argv[2]}/predictions.npz")
for kind in ("trajectory", "dataset", "reset"):
    truth, pred = z[f"fqe|probe|{kind}|truth"], z[f"fqe|probe|{kind}|pred"]
    o[kind] = ((pred - truth) ** 2).mean(1)
for r in rows:
    ratio = np.array(list(r["mse"].values())) / o[r["points"]]
    print(f'{r["model"]:8s} {r["method"]:5s} k={r["k"]} {r["points"]:10s} within1.5x {int((ratio <= 1.5).sum())}/9 worst {ratio.max():.2f} median {np.median(ratio):.2f}')
