"""Every probe's MSE over the per-reward FQE oracle's, per method and point kind, as a markdown
table: a finished evaluate run (its ``predictions.npz``) against a run of ``--methods fqe
--oracle-rewards probe`` with the same family, dataset and seed (so the same points and truth).

    python results/accuracy/probe_vs_oracle.py RUN ORACLE_RUN [EXPANSION.jsonl]

EXPANSION.jsonl (``benchmarks/expansion.py RUN --out FILE``, e.g. with a refitted one-step
model) adds a row per operator and horizon k from its per-reward MSE.
"""
import json
import sys

import numpy as np


def table(run: str, oracle: str, expansion: str | None = None) -> str:
    z, o = np.load(f"{run}/predictions.npz"), np.load(f"{oracle}/predictions.npz")
    probes = json.loads(open(f"{run}/results.json").read())["probes"]
    methods = sorted({k.split("|")[0] for k in z.files if "|probe|" in k and not k.startswith("fqe|")})
    lines = ["| method | points | " + " | ".join(probes) + " | worst | within 1.5x |",
             "|---|---|" + "---|" * (len(probes) + 2)]
    for kind in ("dataset", "trajectory", "reset"):
        if f"fqe|probe|{kind}|truth" not in o.files:
            continue
        truth = o[f"fqe|probe|{kind}|truth"]                                   # (P, n)
        if not np.allclose(z[f"{methods[0]}|probe|{kind}|truth"], truth, rtol=1e-5, atol=1e-4):
            raise SystemExit(f"the two runs' {kind} points or probes differ: same family, dataset and seed?")
        fqe = np.mean((o[f"fqe|probe|{kind}|pred"] - truth) ** 2, 1)         # (P,)
        lines.append(f"| FQE oracle (its MSE) | {kind} | " + " | ".join(f"{v:.3g}" for v in fqe) + " | | |")
        if expansion:   # its rows (k = 0 the operator itself) stand in for the run's predictions
            rows = [(f"{r['method']}+k{r['horizon']}" if r["horizon"] else r["method"],
                     np.array([r["mse"][p] for p in probes]))
                    for r in map(json.loads, open(expansion)) if r["set"] == "probe" and r["points"] == kind]
        else:
            rows = [(m, np.mean((z[f"{m}|probe|{kind}|pred"] - truth) ** 2, 1)) for m in methods]
        for m, mse in rows:
            ratio = mse / fqe
            lines.append(f"| {m} | {kind} | " + " | ".join(f"{v:.2f}" for v in ratio)
                         + f" | {ratio.max():.2f} | {int((ratio <= 1.5).sum())}/{len(ratio)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(*sys.argv[1:4]))
