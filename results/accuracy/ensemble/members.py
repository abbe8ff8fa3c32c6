"""HalfCheetah-Vel expert: five one-step models fitted apart (an ensemble, 50k steps each), each
member alone against the ensemble's answers (keep0: all five averaged, keep3: the three most
central per point), favor and sf at k = 150 and 400, every probe's MSE per point kind. From the
repository root:

    python results/accuracy/ensemble/members.py RUN OUT.jsonl
    python results/accuracy/ensemble/members_summ.py OUT.jsonl ORACLE_RUN
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import jax
import numpy as np

import resolvent
from resolvent.algorithms import onestep
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import family_source

sys.path.insert(0, "benchmarks")
from expansion import refit_onestep  # noqa: E402  (benchmarks/ is not a package)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("out", help="JSON lines, one per model, method, k and kind of points")
    args = ap.parse_args()
    cfg = EvaluateConfig.from_dict(RunDir(args.run).read_config())
    cfg = dataclasses.replace(cfg, eval_points=("trajectory", "dataset", "reset"))
    src = family_source(cfg)
    ens = refit_onestep(cfg, src, 50_000, 5)
    np.savez(args.out + ".model.npz", **onestep.to_arrays(ens))
    models = {"keep0": ens, "keep3": ens._replace(keep=3)}
    for e in range(5):
        models[f"member{e}"] = ens._replace(params=jax.tree_util.tree_map(lambda v, e=e: v[e], ens.params))
    rewards = src.rewards["probe"]
    with open(args.out, "w") as out:
        for name, member in models.items():
            for method in ("favor", "sf"):
                model = resolvent.load(args.run, method)
                model.onestep = member
                for kind, gt in src.points.items():
                    truth = np.stack([gt.q(r) for _, r in rewards])                        # (R, n)
                    for k in (150, 400):
                        pred = np.stack([model.q_values(r, gt.obs0, gt.action0, seed=None, horizon=k).mean(0)
                                         for _, r in rewards])                              # (R, n)
                        mse = ((pred - truth) ** 2).mean(1)
                        out.write(json.dumps({"model": name, "method": method, "k": k, "points": kind,
                                              "mse": {n: float(v) for (n, _), v in zip(rewards, mse)}}) + "\n")
                        out.flush()
                        print(name, method, k, kind, flush=True)


if __name__ == "__main__":
    main()
