"""Does the trust report order the methods as the truth does? For evaluate runs with truth and
the trust report (``--trust on``), a markdown table per run: each method's agreement with
per-reward FQE on the held-out rewards at dataset transitions (no truth needed) beside its true
accuracy (Monte-Carlo) on the same held-out rewards and on the test and probe rewards, and the
Spearman correlation across methods between the trust report's order and each true order.

    python benchmarks/trust_check.py results/trust/pendulum-angle-expert
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from resolvent.evaluation.metrics import spearman

TRUTH = [("heldout", "data_", "held-out, dataset pts"), ("heldout", "traj_", "held-out, trajectory pts"),
         ("test", "data_", "test, dataset pts"), ("test", "traj_", "test, trajectory pts"),
         ("probe", "data_", "probe, dataset pts")]


def table(run: Path) -> str:
    res = json.loads((run / "results.json").read_text())
    methods = {m: r for m, r in res["methods"].items() if "trust_r2_each" in r}
    trust = {m: float(np.median([np.mean(v) for v in r["trust_r2_each"].values()])) for m, r in methods.items()}
    cols = [(f"{p}{s}_rel_rmse", name) for s, p, name in TRUTH
            if all(f"{p}{s}_rel_rmse" in r for r in methods.values())]
    lines = [f"{res['family'] or 'data'} / {res['dataset']}: trust report against the truth (relative RMSE, lower is "
             f"better; the trust report's median R^2 against per-reward FQE, higher is better)", "",
             "| method | trust: median R^2 vs FQE | trust: rel. RMSE vs FQE | "
             + " | ".join(f"true rel. RMSE, {name}" for _, name in cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for m, r in methods.items():
        lines.append(f"| {m} | {trust[m]:.3f} | {np.mean(r['trust_rel_rmse']):.3f} | "
                     + " | ".join(f"{np.mean(r[k]):.3f}" for k, _ in cols) + " |")
    oracle = res.get("trust_oracle", {})
    if oracle:
        lines.append("| per-reward FQE (the trust report's reference) | - | - | "
                     + " | ".join(f"{oracle[k]:.3f}" if k in oracle else "-" for k, _ in cols) + " |")
    order = np.array([trust[m] for m in methods])
    agree = [float(spearman(order, -np.array([np.mean(methods[m][k]) for m in methods]))) for k, _ in cols]
    lines.append("| rank agreement (Spearman across methods) | | | " + " | ".join(f"{a:.2f}" for a in agree) + " |")
    pick = max(trust, key=trust.get)
    for k, name in cols:
        best = min(np.mean(r[k]) for r in methods.values())
        lines.append(f"- {name}: the trust report's pick {pick} has true rel. RMSE {np.mean(methods[pick][k]):.3f}, "
                     f"the best method {best:.3f} ({np.mean(methods[pick][k]) / best - 1:+.0%})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    for run in parser.parse_args().runs:
        print(table(run), end="\n\n")


if __name__ == "__main__":
    main()
