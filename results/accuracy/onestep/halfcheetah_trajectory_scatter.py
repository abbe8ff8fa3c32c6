"""sf+k400 on HalfCheetah-Vel expert with the one-step model refitted at 50k steps: truth and
answer (mean, spread, correlation) of three probes at every kind of evaluation point. From the
repository root:

    python results/accuracy/onestep/halfcheetah_trajectory_scatter.py RUN
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import family_source

sys.path.insert(0, "benchmarks")
from expansion import refit_onestep  # noqa: E402  (benchmarks/ is not a package)

PROBES = ("forward-velocity", "speed-band", "pitch-sq")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a HalfCheetah-Vel evaluate run with sf among its methods")
    args = ap.parse_args()
    cfg = EvaluateConfig.from_dict(RunDir(args.run).read_config())
    src = family_source(cfg)
    model = resolvent.load(args.run, "sf")
    model.onestep = refit_onestep(cfg, src, 50_000)
    for kind, gt in src.points.items():
        for name, r in src.rewards["probe"]:
            if name not in PROBES:
                continue
            t = gt.q(r)
            p = model.q_values(r, gt.obs0, gt.action0, seed=None, horizon=400).mean(0)
            print(f"{kind} {name} truth mean {t.mean():.2f} sd {t.std():.2f}  pred mean {p.mean():.2f} "
                  f"sd {p.std():.2f} corr {np.corrcoef(t, p)[0, 1]:.2f}")
        print(kind, "obs0 speed (obs[8]) mean", gt.obs0[:, 8].mean().round(3),
              "action0 |a| mean", np.abs(gt.action0).mean().round(3))


if __name__ == "__main__":
    main()
