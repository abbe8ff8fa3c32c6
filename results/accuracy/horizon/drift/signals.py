"""kauto's signals at each kind of points of a finished run, beside the truth: does any signal
without ground truth see the one-step model's shared drift?

kauto chooses k*(r) = argmin_k e_model(r, k) + gamma^(2k) e_op(r) (``algorithms/horizon.py``),
e_model the spread of the ensemble's members under pi from the query points. Members fitted to
the same data can drift together, so their spread can stay small where every one of them is
wrong. Along the data's own stretches the model's error is measurable (``model_errors``: the
members' rollout replaying the behaviour's deviations from pi against what the data did), and
so is the members' spread there. This script writes, per kind of points, reward set and reward:

- ``spread``: e_model(r, k) as kauto has it, the members' spread under pi at the query points;
- ``stretch_err``: the model's squared error along the data's stretches (the first rule's e_model);
- ``stretch_spread``: the members' spread along the same stretches;
- ``e_op``: the operators' variance at the query points;
- ``e_op_k``: the operators' variance where G_k's tail is taken, at (s_k, pi(s_k)) of the rollout
  (its kept members' mean), for each candidate k (k = 0: ``e_op``);
- ``mse``: each operator's MSE against the truth at every candidate k (0: the operator alone).

    python results/accuracy/horizon/drift/signals.py RUN OUT.jsonl

RUN is a finished ``resolvent evaluate`` run with horizons, two or more operators and an
ensemble one-step model (its ``models/``); ``rules.py`` scores choice rules on the lines.
"""
import json
import sys
from pathlib import Path

import numpy as np

import resolvent
from resolvent.algorithms.horizon import find_stretches, model_errors, point_spread, validate
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.problem import prepare
from resolvent.experiments.rundir import RunDir

run, out = Path(sys.argv[1]), Path(sys.argv[2])
cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
p = prepare(cfg, None)
pred = np.load(run / "predictions.npz")
all_obs, all_act = p.raw_points()                                           # every evaluation point
first = resolvent.load(run, f"{cfg.methods[0]}+kauto")                     # its peers: the other operators
candidates, gamma = (0, *cfg.horizons), first.gamma
stretches = find_stretches(p.features, max(cfg.horizons), cfg.stretches, cfg.seed)
along = validate(first.onestep, first.target_policy, stretches)            # the members along the stretches
rows_out = []
for kind, rows in p.slices.items():
    if kind not in ("reset", "trajectory", "dataset"):
        continue
    obs, act = all_obs[rows], all_act[rows]
    ex = first.expansion(obs, act, max(candidates))
    for s in ("test", "probe"):
        for i, (name, r) in enumerate(p.source.rewards[s]):
            answers = np.stack([m.q_values(r, obs, act, seed=None, horizon=0).mean(0)
                                for m in (first, *first.peers)])           # (M, b)
            tails = [answers]                                                  # k = 0: the query points
            for k in candidates[1:]:
                pre = ex.prefix(k)
                tails.append(np.stack([pre.member_mean(m.q_values(r, pre.obs, pre.action, seed=None, horizon=0).mean(0))
                                       for m in (first, *first.peers)]))       # (M, b) G at (s_k, pi(s_k))
            row = {"kind": kind, "set": s, "reward": name, "k": list(candidates),
                   "e_op_k": [float(t.var(0).mean()) for t in tails],
                   "spread": point_spread(ex, r, candidates, gamma).mean(1).tolist(),
                   "stretch_err": model_errors(along, stretches, r, candidates, gamma).tolist(),
                   "stretch_spread": point_spread(along, r, candidates, gamma).mean(1).tolist(),
                   "e_op": float(answers.var(0).mean()), "mse": {}}
            for op in cfg.methods:
                truth = pred[f"{op}|{s}|{kind}|truth"][..., i, :].ravel()
                row["mse"][op] = [float(np.mean((pred[f"{op}|{s}|{kind}|pred" if k == 0 else
                                                      f"{op}+k{k}|{s}|{kind}|pred"][..., i, :].ravel() - truth) ** 2))
                                  for k in candidates]
            rows_out.append(row)
out.write_text("".join(json.dumps(r) + "\n" for r in rows_out))
print(f"{out}: {len(rows_out)} lines")
