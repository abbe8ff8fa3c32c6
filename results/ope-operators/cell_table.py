"""A cell of the favor/fb grid as results/README.md quotes it: IQM [95%] over its seeds of each
operator, its k = 60 and k = 400 expansions and kauto, from report.csv. On Pendulum-Angle at the
reset points; on the MuJoCo families also at the dataset's states, where their true Q varies.

    python results/ope-operators/cell_table.py [DATASET] [FAMILY]     # expert, replay or medium;
                                                                      # pendulum-angle by default
"""
import csv
import sys
from pathlib import Path

from resolvent.experiments.report import NAMES, fmt

RESET = ("test_mse", "test_r2", "probe_mse", "probe_r2")
DATA = ("test_mse", "data_test_mse", "data_test_r2", "data_probe_r2")


def main(dataset: str = "expert", family: str = "pendulum-angle") -> None:
    metrics = RESET if family == "pendulum-angle" else DATA
    rows = [r for r in csv.DictReader(open(Path(__file__).parent / "report.csv"))
            if r["family"] == family and r["dataset"] == dataset]
    cell = {(r["method"], r["metric"]): r for r in rows}
    print("| method | seeds | " + " | ".join(NAMES[m] for m in metrics) + " |")
    print("|---|---|" + "---|" * len(metrics))
    for op in ("favor", "fb"):
        for method in (op, f"{op}+k60", f"{op}+k400", f"{op}+kauto"):
            if (method, "test_mse") not in cell:
                continue
            seeds = cell[(method, "test_mse")]["seeds"]
            values = [f"{fmt(float(cell[(method, m)]['iqm']))} [{fmt(float(cell[(method, m)]['ci_low']))}, "
                      f"{fmt(float(cell[(method, m)]['ci_high']))}]" for m in metrics]
            print(f"| {method} | {seeds} | " + " | ".join(values) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:])
