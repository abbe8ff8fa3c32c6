"""Does the trust report order the methods as the truth does? For evaluate runs with truth and
the trust report (``--trust on``), a markdown table per run: each method's agreement with
per-reward FQE on the held-out rewards at dataset transitions (no truth needed) beside its true
accuracy (Monte-Carlo) on the same held-out rewards and on the test and probe rewards, and the
Spearman correlation across methods between the trust report's order and each true order.

    python results/trust/check.py results/trust/pendulum-angle-expert
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from resolvent.evaluation.metrics import spearman
from resolvent.experiments import EvaluateConfig
from resolvent.experiments.trust import choose_method

TRUTH = [("heldout", "data_", "held-out, dataset pts"), ("heldout", "traj_", "held-out, trajectory pts"),
         ("test", "data_", "test, dataset pts"), ("test", "traj_", "test, trajectory pts"),
         ("probe", "data_", "probe, dataset pts")]


def table(run: Path) -> str:
    res = json.loads((run / "results.json").read_text())
    methods = {m: r for m, r in res["methods"].items() if "trust_rel_rmse" in r}
    names = list(methods)
    trust_r2 = np.array([np.median([np.mean(v) for v in methods[m]["trust_r2_each"].values()]) for m in names])
    trust_rel = np.array([float(np.mean(methods[m]["trust_rel_rmse"])) for m in names])    # auto's criterion
    median = np.array([np.median([np.mean(v) for v in methods[m]["trust_rel_rmse_each"].values()])  # the old rule
                       if "trust_rel_rmse_each" in methods[m] else np.nan for m in names])
    cols = [(f"{p}{s}_rel_rmse", name) for s, p, name in TRUTH
            if all(f"{p}{s}_rel_rmse" in r for r in methods.values())]
    true = {k: np.array([np.mean(methods[m][k]) for m in names]) for k, _ in cols}
    lines = ["| method | trust: median R^2 vs FQE | trust: mean rel. RMSE | trust: median rel. RMSE | "
             + " | ".join(f"true rel. RMSE, {name}" for _, name in cols) + " |",
             "|---|---|---|---|" + "---|" * len(cols)]
    for i, m in enumerate(names):
        lines.append(f"| {m} | {trust_r2[i]:.3f} | {trust_rel[i]:.3f} | "
                     + ("-" if np.isnan(median[i]) else f"{median[i]:.3f}") + " | "
                     + " | ".join(f"{true[k][i]:.3f}" for k, _ in cols) + " |")
    oracle = res.get("trust_oracle", {})
    if oracle:
        lines.append("| per-reward FQE (the trust report's reference) | - | - | - | "
                     + " | ".join(f"{oracle[k]:.3f}" if k in oracle else "-" for k, _ in cols) + " |")
    for label, score in (("median R^2", trust_r2), ("mean rel. RMSE", -trust_rel)):
        lines.append(f"| rank agreement with the truth, trust by {label} (Spearman across methods) | | | | "
                     + " | ".join(f"{float(spearman(score, -true[k])):.2f}" for k, _ in cols) + " |")
    lines.append("")
    tie = EvaluateConfig.auto_tie
    picks = [("the lowest mean rel. RMSE (no tie)", names[int(np.argmin(trust_rel))])]
    if all("trust_rel_rmse_each" in r for r in methods.values()):   # runs before it kept no per-reward scores
        rule = "agreement or Bellman residual" if all("trust_bellman_each" in r for r in methods.values()) \
            else "mean rel. RMSE"
        picks.insert(0, (f"auto's pick ({rule}, the longest expansion within {tie:.0%})",
                         choose_method(methods, tuple(names), tie)["chosen"]))
    if not np.isnan(median).any():
        picks.append(("the median rule's pick", names[int(np.argmin(median))]))
    for rule, pick in picks:
        lines += [f"- {name}: {rule}, {pick}, has true rel. RMSE {true[k][names.index(pick)]:.3f}; "
                  f"the best method's is {true[k].min():.3f} ({true[k][names.index(pick)] / true[k].min() - 1:+.0%})"
                  for k, name in cols]
    return "\n".join([f"{res['family'] or 'data'} / {res['dataset']}: the trust report against the truth "
                      f"(relative RMSE: lower is better)", ""] + lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    for run in parser.parse_args().runs:
        print(table(run), end="\n\n")


if __name__ == "__main__":
    main()
