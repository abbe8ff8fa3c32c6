"""The mean of favor+kauto and fb+kauto (auto's pick and its tied partner, ``pair_average.py``)
against per-reward FQE on HalfCheetah-Vel expert, at the 64 points of each kind of
trust-signals/hc-expert-fresh: a copy of that run whose fb+kauto answers are replaced by the mean,
compared with ``resolvent compare`` (the fb+kauto row of compare.md is the mean):

    python results/accuracy/intervals/mean_compare.py
"""
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

RUN = Path("results/accuracy/trust-signals/hc-expert-fresh")
ORACLE = Path("results/accuracy/halfcheetah-vel-probe-oracle")
OUT = Path("results/accuracy/intervals/hc-expert-64-mean")
PICK, PARTNER = "favor+kauto", "fb+kauto"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for name in ("config.json", "results.json"):
            shutil.copy(RUN / name, scratch)
        with np.load(RUN / "predictions.npz") as z:
            arrays = {k: z[k] for k in z.files}
        for key in [k for k in arrays if k.startswith(f"{PARTNER}|") and k.endswith("|pred")]:
            arrays[key] = 0.5 * (arrays[key] + arrays[f"{PICK}|{key.split('|', 1)[1]}"])
        np.savez(Path(scratch) / "predictions.npz", **arrays)
        subprocess.run(["resolvent", "compare", scratch, str(ORACLE), "--methods", f"{PICK},{PARTNER}",
                        "--show", f"{PICK},{PARTNER}", "--out", str(OUT)], check=True)
    md = OUT / "compare.md"
    md.write_text(f"Made by mean_compare.py: the {PARTNER} rows below are the mean of {PICK} and {PARTNER} "
                  f"of {RUN}.\n\n" + md.read_text())


if __name__ == "__main__":
    main()
