"""HalfCheetah-Vel replay's dataset states split by the cheetah's posture: on its back (root
angle |obs[1]| > pi / 2) or not. Each method's MSE and R^2 against the truth over either group,
per reward set.

    python results/accuracy/horizon/per-point/flipped.py RUN

RUN: a finished ``resolvent evaluate`` run of a HalfCheetah family (obs[1] the root's angle).
"""
import sys
from pathlib import Path

import numpy as np

from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.problem import prepare
from resolvent.experiments.rundir import RunDir


def main() -> None:
    run = Path(sys.argv[1])
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    p = prepare(cfg, None)
    angle = p.raw_points()[0][p.slices["dataset"], 1]                              # (b,) the root's angle
    back = np.abs(angle) > np.pi / 2                                                # (b,)
    pred = np.load(run / "predictions.npz")
    methods = sorted({k.split("|")[0] for k in pred.files if k.endswith("|test|dataset|pred")},
                     key=lambda m: (m.split("+")[0], len(m), m))
    print(f"{run}: {back.sum()} of {len(back)} dataset states with the cheetah on its back "
          f"(root angles {[round(float(a), 2) for a in angle[back]]})\n")
    print("| set | method | MSE, all | MSE, upright | MSE, on its back | R^2, all | R^2, upright |")
    print("|---|---|---|---|---|---|---|")
    for s in ("train", "test", "probe"):
        for m in methods:
            q, t = pred[f"{m}|{s}|dataset|pred"], pred[f"{m}|{s}|dataset|truth"]     # (..., R, b)
            q, t = q.reshape(-1, q.shape[-1]), t.reshape(-1, t.shape[-1])            # (S R, b)

            def r2(mask, q=q, t=t):
                return float(np.mean(1 - ((q[:, mask] - t[:, mask]) ** 2).mean(1) / t[:, mask].var(1)))

            e = (q - t) ** 2
            print(f"| {s} | {m} | {e.mean():.2f} | {e[:, ~back].mean():.2f} | {e[:, back].mean():.1f} | "
                  f"{r2(np.ones_like(back)):.3f} | {r2(~back):.3f} |")


if __name__ == "__main__":
    main()
