"""HalfCheetah-Vel replay at 512 points: auto's favor+kauto over per-reward FQE, probe by probe,
apart at the states with the cheetah on its back (|pitch| > 1.2 rad) and the upright rest, with
95% paired bootstrap intervals over the points (``metrics.mse_ratio``):

    python results/accuracy/intervals/upright.py > results/accuracy/intervals/upright.md
"""
import json

import numpy as np

from resolvent.evaluation.metrics import mse_ratio, resamples
from resolvent.experiments import open_run

RUN, ORACLE = "results/accuracy/intervals/hc-replay-512", "results/accuracy/intervals/hc-replay-512-oracle"
PICK = "favor+kauto"


def main() -> None:
    z, o = np.load(f"{RUN}/predictions.npz"), np.load(f"{ORACLE}/predictions.npz")
    probes = json.load(open(f"{RUN}/results.json"))["probes"]
    _, p = open_run(RUN)                                        # the points' states (the run's config)
    print(f"{PICK}'s MSE over per-reward FQE's [95% interval]\n")
    print("| points | " + " | ".join(probes) + " | within 1.5x | surely |\n|---|" + "---|" * (len(probes) + 2))
    for kind in ("dataset", "trajectory"):
        pitch = np.asarray(p.source.points[kind].obs0)[:, 1]
        back = np.abs(pitch) > 1.2
        for label, sel in (("on its back, pitch beyond 1.2 rad", back), ("upright", ~back)):
            truth, ref = o[f"fqe|probe|{kind}|truth"][:, sel], o[f"fqe|probe|{kind}|pred"][:, sel]
            ratio, low, high = mse_ratio(z[f"{PICK}|probe|{kind}|pred"][:, sel], ref, truth, resamples(sel.sum()))
            print(f"| {kind}, {label}: {sel.sum()} | " + " | ".join(f"{r:.2f} [{a:.2f}, {b:.2f}]"
                                                                 for r, a, b in zip(ratio, low, high))
                  + f" | {(ratio <= 1.5).sum()}/{len(ratio)} | {(high <= 1.5).sum()}/{len(ratio)} |")


if __name__ == "__main__":
    main()
