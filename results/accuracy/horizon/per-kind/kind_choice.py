"""kauto's horizon chosen per kind of points (reset, trajectory, dataset) against the choice over
all of them at once, on a finished run: one JSON line per (kind, reward set, reward) with both
choices and every operator's MSE against the truth at each candidate k (from predictions.npz).

    python results/accuracy/horizon/per-kind/kind_choice.py RUN OUT.jsonl

RUN is a finished ``resolvent evaluate`` run with kauto (horizons and two or more operators).
``k_all`` is ``OperatorModel.choose_horizon`` at all the run's evaluation points at once (what
``resolvent evaluate`` chose before it chose per kind), ``k_kind`` at that kind's points alone
(what it chooses now), both made here with today's rule.
"""
import json
import sys
from pathlib import Path

import numpy as np

import resolvent
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.problem import prepare
from resolvent.experiments.rundir import RunDir

run = Path(sys.argv[1])
cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
p = prepare(cfg, None)
pred = np.load(run / "predictions.npz")
all_obs, all_act = p.raw_points()                                           # every evaluation point
first = resolvent.load(run, f"{cfg.methods[0]}+kauto")     # the run's candidates and other operators
every = {s: {name: first.choose_horizon(r, all_obs, all_act) for name, r in p.source.rewards[s]}
         for s in ("test", "probe")}
out = []
for kind, rows in p.slices.items():
    obs, act = all_obs[rows], all_act[rows]
    if kind not in ("reset", "trajectory", "dataset"):
        continue
    for s in ("test", "probe"):
        for i, (r_name, r) in enumerate(p.source.rewards[s]):
            k = first.choose_horizon(r, obs, act)
            k_all = every[s][r_name]
            row = {"kind": kind, "set": s, "reward": r_name, "k_kind": k, "k_all": k_all}
            for op in cfg.methods:
                truth = pred[f"{op}|{s}|{kind}|truth"][..., i, :].ravel()
                def mse(h):
                    key = f"{op}|{s}|{kind}|pred" if h == 0 else f"{op}+k{h}|{s}|{kind}|pred"
                    return float(np.mean((pred[key][..., i, :].ravel() - truth) ** 2))
                row[op] = {h: mse(h) for h in (0, *cfg.horizons)}
            out.append(row)
            print(json.dumps(row), flush=True)
(Path(sys.argv[2])).write_text("\n".join(json.dumps(r) for r in out) + "\n")
