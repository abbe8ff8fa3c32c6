"""Every probe's R^2 along pi's trajectories and at the reset points, from the run's operators and
today's one-step model (refitted from the run's config: the same network, and since this session
the scalars that are quadratics of the action computed from it), against the run's Monte-Carlo
truth. The run's own ``predictions.npz`` holds the answers of the model it was made with
(``per_probe.py``).

    python results/accuracy/reacher-kauto/probes_now.py RUN > results/accuracy/reacher-kauto/probes-now.txt
"""
from __future__ import annotations

import argparse

import numpy as np

from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.problem import prepare
from resolvent.model import load

K = 400


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    args = ap.parse_args()
    cfg = EvaluateConfig.from_dict(RunDir(args.run).read_config())
    p = prepare(cfg)
    probes = p.source.rewards["probe"]
    for kind in ("reset", "trajectory"):
        gt = p.source.points[kind]
        for m in (m for m in cfg.methods if m != "fqe"):
            model = load(args.run, f"{m}+k{K}")
            model.onestep = p.pi.model
            r2 = []
            for _, reward in probes:
                truth = gt.q(reward)
                q = model.q_values(reward, gt.obs0, gt.action0, seed=None).mean(0)
                r2.append(1 - ((q - truth) ** 2).mean() / truth.var())
            print(f"{kind:10s} {m}+k{K:<4d} R^2 " + "  ".join(f"{n} {v:.2f}" for (n, _), v in zip(probes, r2))
                  + f"   mean {np.mean(r2):.2f}")


if __name__ == "__main__":
    main()
