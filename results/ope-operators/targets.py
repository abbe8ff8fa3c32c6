"""Issue 16's Pendulum-Angle target (probe mean R^2 >= 0.85 with none below 0.6, test R^2 >= 0.9)
on every committed seed of the favor/fb grid: per cell and expansion, the lowest probe mean over
seeds, the worst single probe of any seed and the lowest test R^2.

    python results/ope-operators/targets.py
"""
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent


def main() -> None:
    print("| cell | method | seeds | lowest probe mean R^2 | worst probe R^2 (which) | lowest test R^2 |")
    print("|---|---|---|---|---|---|")
    for cell in ("expert", "replay", "medium"):
        files = sorted(HERE.glob(f"pendulum-angle-{cell}/seed-*/results.json"))
        for method in ("favor", "fb", "favor+k400", "fb+k400", "favor+kauto", "fb+kauto"):
            means, worst, test = [], (np.inf, ""), []
            for f in files:
                entry = json.loads(f.read_text())["methods"][method]
                each = {name: float(np.mean(v)) for name, v in entry["probe_r2_each"].items()}
                means.append(np.mean(list(each.values())))
                name = min(each, key=each.get)
                worst = min(worst, (each[name], name))
                test.append(float(np.mean(entry["test_r2"])))
            if files:
                print(f"| {cell} | {method} | {len(files)} | {min(means):.3f} | {worst[0]:.3f} ({worst[1]}) "
                      f"| {min(test):.4f} |")


if __name__ == "__main__":
    main()
