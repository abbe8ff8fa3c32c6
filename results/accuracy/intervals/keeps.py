"""A finished run's favor+k150 and favor+k400 answers with other ensemble rules (the mean of the
``keep`` members of five closest to the others per point; 0: all five), the run's own one-step
model, written as a run-format ``predictions.npz`` (answers named ``favor+k400@keep3``) for
``resolvent compare``:

    python results/accuracy/intervals/keeps.py runs/hc-replay-512 runs/hc-replay-512-keeps 0,2,3,4
    resolvent compare runs/hc-replay-512-keeps results/accuracy/intervals/hc-replay-512-oracle
"""
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from expansion import bench  # noqa: E402


def main(run: str, out: str, keeps: str) -> None:
    answers = {}
    bench(run, ["favor"], [150, 400], None, None, None, tuple(int(x) for x in keeps.split(",")), None, answers)
    arrays = {}
    for key, pred in answers.items():             # "favor+keep3|k400|probe|dataset" -> (R, n)
        if key.startswith("truth"):
            continue
        label, k, s, kind = key.split("|")
        method, _, keep = label.partition("+keep")   # one keep alone: bench labels it by the method
        keep = keep or keeps
        arrays[f"{method}+{k}@keep{keep}|{s}|{kind}|pred"] = pred
        arrays[f"{method}+{k}@keep{keep}|{s}|{kind}|truth"] = answers[f"truth|{s}|{kind}"]
    Path(out).mkdir(parents=True, exist_ok=True)
    np.savez(Path(out) / "predictions.npz", **arrays)
    shutil.copy(Path(run) / "results.json", Path(out) / "results.json")
    print("written", out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
