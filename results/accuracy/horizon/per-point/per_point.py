"""kauto's horizon chosen at each query point instead of for each kind of points: scored against
the truth on a finished run.

kauto chooses k*(r) = argmin_k e_model(r, k) + gamma^(2k) e_op(r) for a batch of points, both
signals means over the batch (``OperatorModel.choose_horizons``; ``resolvent evaluate`` asks one
batch per kind of points). Where a few points of a batch lie where the one-step model cannot go
(HalfCheetah-Vel replay: 6 of its 64 dataset states have the cheetah on its back), their spread
dominates the batch's mean and the whole batch gets a short k. Chosen per point, the same rule
reads each point's own e_model(r, k) (the members' spread there, ``point_spread``) and e_op(r)
(the operators' variance there): G_{k*(x)}[r](x), each answer still one G_k of its own reward.

For each operator, kind of points, reward set (test, probe) and reward, the MSE against the truth
of: the choice per point, per kind (the rule recomputed here; ``kauto`` the run's own answer),
k = 0 and k = 400, each over the best fixed k's MSE for that reward; the geometric mean and the
worst over the rewards.

    python results/accuracy/horizon/per-point/per_point.py RUN [RUN ...] > per-point.md

RUN: a finished ``resolvent evaluate`` run with horizons, two or more operators and an ensemble
one-step model (its ``models/``).
"""
import sys
from pathlib import Path

import numpy as np

import resolvent
from resolvent.algorithms.horizon import choose, point_spread
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.problem import prepare
from resolvent.experiments.rundir import RunDir


def answers_per_point(fixed: np.ndarray, e_model: np.ndarray, e_op: np.ndarray, candidates: tuple,
                      gamma: float) -> np.ndarray:
    """The answers (S, b) with k chosen at each point j from e_model[:, j] (K, b) and e_op[j] (b,),
    out of every candidate k's ``fixed`` (K, S, b)."""
    b = e_model.shape[1]
    at = [candidates.index(choose(e_model[:, j], float(e_op[j]), candidates, gamma)) for j in range(b)]
    return fixed[at, :, np.arange(b)].T


def main() -> None:
    print("| run | operator | points | rule | geometric mean over the best k | worst | reward sets |")
    print("|---|---|---|---|---|---|---|")
    for run in map(Path, sys.argv[1:]):
        cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
        p = prepare(cfg, None)
        pred = np.load(run / "predictions.npz")
        all_obs, all_act = p.raw_points()                                          # every evaluation point
        candidates = (0, *cfg.horizons)
        for op in cfg.methods:
            model = resolvent.load(run, f"{op}+kauto")
            gamma = model.gamma
            for kind, rows in p.slices.items():
                if kind not in ("reset", "trajectory", "dataset"):
                    continue
                obs, act = all_obs[rows], all_act[rows]
                ex = model.expansion(obs, act, max(candidates))
                ratios = {"per point": [], "per point, e_op of the kind": [], "per kind": [], "kauto": [],
                          "k = 0": [], f"k = {candidates[-1]}": []}
                for s in ("test", "probe"):
                    names = [n for n, _ in p.source.rewards[s]]
                    truth = pred[f"{op}|{s}|{kind}|truth"].reshape(-1, len(names), len(obs))      # (S, R, b)
                    fixed = np.stack([pred[f"{op}|{s}|{kind}|pred" if k == 0 else f"{op}+k{k}|{s}|{kind}|pred"]
                                      .reshape(truth.shape) for k in candidates])                  # (K, S, R, b)
                    auto = pred[f"{op}+kauto|{s}|{kind}|pred"].reshape(truth.shape)
                    for i, (_, r) in enumerate(p.source.rewards[s]):
                        e_model = point_spread(ex, r, candidates, gamma)                         # (K, b)
                        e_op = np.stack([m.q_values(r, obs, act, seed=None, horizon=0).mean(0)
                                         for m in (model, *model.peers)]).var(0)                 # (b,)
                        per_point = answers_per_point(fixed[:, :, i], e_model, e_op, candidates, gamma)
                        op_of_kind = answers_per_point(fixed[:, :, i], e_model, np.full_like(e_op, e_op.mean()),
                                                       candidates, gamma)
                        kind_k = candidates.index(choose(e_model.mean(1), float(e_op.mean()), candidates, gamma))
                        err = ((fixed[:, :, i] - truth[:, i]) ** 2).mean((1, 2))                 # (K,)
                        best = err.min()
                        for rule, e in (("per point", ((per_point - truth[:, i]) ** 2).mean()),
                                        ("per point, e_op of the kind", ((op_of_kind - truth[:, i]) ** 2).mean()),
                                        ("per kind", err[kind_k]),
                                        ("kauto", ((auto[:, i] - truth[:, i]) ** 2).mean()),
                                        ("k = 0", err[0]), (f"k = {candidates[-1]}", err[-1])):
                            ratios[rule].append(e / best)
                for rule, x in ratios.items():
                    x = np.asarray(x)
                    print(f"| {run.name} | {op} | {kind} | {rule} | {np.exp(np.log(x).mean()):.2f}x | "
                          f"{x.max():.2f}x | test, probe ({len(x)} rewards) |", flush=True)


if __name__ == "__main__":
    main()
