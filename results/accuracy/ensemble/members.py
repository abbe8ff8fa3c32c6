"""HalfCheetah-Vel expert: five one-step models fitted apart (an ensemble, 50k steps each), each member alone
against the ensemble's answers (keep0: all five averaged, keep3: the three most central per point), favor and
sf at k = 150 and 400, every probe's MSE per point kind. From the repository root:

    python results/accuracy/ensemble/members.py RUN OUT.jsonl
    python results/accuracy/ensemble/members_summ.py OUT.jsonl ORACLE_RUN
"""
import json, sys
import numpy as np
import jax
sys.path.insert(0, "benchmarks")
import resolvent
from expansion import refit_onestep
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import family_source
import dataclasses

run = sys.argv[1]
cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
cfg = dataclasses.replace(cfg, eval_points=("trajectory", "dataset", "reset"))
src = family_source(cfg)
ens = refit_onestep(cfg, src, 50000, 5)
np.savez(sys.argv[2] + ".model.npz", **resolvent.algorithms.onestep.to_arrays(ens))
models = {"keep0": ens, "keep3": ens._replace(keep=3)}
for e in range(5):
    models[f"member{e}"] = ens._replace(params=jax.tree_util.tree_map(lambda v: v[e], ens.params))
out = open(sys.argv[2], "w")
for name, os_ in models.items():
    for method in ("favor", "sf"):
        model = resolvent.load(run, method)
        model.onestep = os_
        for kind, gt in src.points.items():
            rewards = src.rewards["probe"]
            truth = np.stack([gt.q(r) for _, r in rewards])
            for k in (150, 400):
                pred = np.stack([model.q_values(r, gt.obs0, gt.action0, seed=None, horizon=k).mean(0) for _, r in rewards])
                mse = ((pred - truth) ** 2).mean(1)
                row = {"model": name, "method": method, "k": k, "points": kind,
                       "mse": {n: float(v) for (n, _), v in zip(rewards, mse)}}
                out.write(json.dumps(row) + "\n"); out.flush()
                print(name, method, k, kind, flush=True)
