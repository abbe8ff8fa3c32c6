"""A cell of the favor/fb grid on Pendulum-Angle (expert by default) as results/README.md quotes
it: IQM [95%] over its seeds of each operator, its k = 60 and k = 400 expansions and kauto, from
report.csv.

    python results/ope-operators/cell_table.py [DATASET]      # expert, replay or medium
"""
import csv
import sys
from pathlib import Path

from resolvent.experiments.report import fmt

METRICS = (("test_mse", "test MSE"), ("test_r2", "test R^2"), ("probe_mse", "probe MSE"), ("probe_r2", "probe R^2"))


def main(dataset: str = "expert") -> None:
    rows = [r for r in csv.DictReader(open(Path(__file__).parent / "report.csv"))
            if r["family"] == "pendulum-angle" and r["dataset"] == dataset]
    cell = {(r["method"], r["metric"]): r for r in rows}
    print("| method | seeds | " + " | ".join(name for _, name in METRICS) + " |")
    print("|---|---|" + "---|" * len(METRICS))
    for op in ("favor", "fb"):
        for method in (op, f"{op}+k60", f"{op}+k400", f"{op}+kauto"):
            if (method, "test_mse") not in cell:
                continue
            seeds = cell[(method, "test_mse")]["seeds"]
            values = [f"{fmt(float(cell[(method, m)]['iqm']))} [{fmt(float(cell[(method, m)]['ci_low']))}, "
                      f"{fmt(float(cell[(method, m)]['ci_high']))}]" for m, _ in METRICS]
            print(f"| {method} | {seeds} | " + " | ".join(values) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
