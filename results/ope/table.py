"""The OPE grid's test MSE at 10 seeds as one Markdown table (results/README.md): a row per family,
dataset and preset, a column per network, IQM [95% interval] from ``report.csv`` (this folder's
joined report), the lowest IQM of each row in bold.

    python results/ope/table.py [--metric test_mse]
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

from resolvent.experiments.plots import FAMILY_ORDER, KIND_ORDER
from resolvent.experiments.report import fmt

METHODS = {"attention": "attention", "linear": "linear", "vanilla": "vanilla", "sf": "successor features"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--metric", default="test_mse")
    args = ap.parse_args()
    rows = [r for r in csv.DictReader((Path(__file__).parent / "report.csv").open()) if r["metric"] == args.metric]
    cells = {}
    for r in rows:
        cells.setdefault((r["family"], r["dataset"], r["preset"]), {})[r["method"]] = r
    print("| family / dataset | preset | seeds | " + " | ".join(METHODS.values()) + " |")
    print("|---|---|---|" + "---|" * len(METHODS))
    order = sorted(cells, key=lambda c: (FAMILY_ORDER.index(c[0]), KIND_ORDER.index(c[1]), c[2] != "paper"))
    for fam, kind, preset in order:
        by = cells[(fam, kind, preset)]
        low = (min if args.metric.endswith("mse") else max)(by, key=lambda m: float(by[m]["iqm"]))
        vals = [f"{fmt(float(by[m]['iqm']))} [{fmt(float(by[m]['ci_low']))}, {fmt(float(by[m]['ci_high']))}]"
                for m in METHODS]
        vals = [f"**{v}**" if m == low else v for m, v in zip(METHODS, vals)]
        seeds = min(int(by[m]["seeds"]) for m in METHODS)
        print(f"| {fam} / {kind} | {preset} | {seeds} | " + " | ".join(vals) + " |")


if __name__ == "__main__":
    main()
