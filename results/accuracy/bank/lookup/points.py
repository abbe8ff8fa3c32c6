"""Where a bank answer's error is, point by point: G_K and the bank answer (``METHOD+bK+kk``,
with the nearest bank states by state alone and by (s, pi(s)), ``BankConfig.actions``) at every
kind of a finished run's points, each point's squared error over the test rewards, the mean
(the tables' test MSE), the mean without the worst point, the worst point's share of the sum,
its state and the model steps it took before the bank answered; then, for the state-only bank
answer's worst point of each kind, G_K at the bank states nearest each kept member's last state.

    python results/accuracy/bank/lookup/points.py RUN --method favor [--horizon 400] [--k 60]
        > results/accuracy/bank/lookup/NAME-points.txt

The bank as ``resolvent evaluate`` makes it (P = 2048 of the run's states, 8 neighbours, reach 0.1).
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from resolvent.algorithms.bank import AUTO_BANK_POINTS, Bank, BankConfig, bank_starts
from resolvent.experiments import open_run
from resolvent.experiments.evaluate import set_answers
from resolvent.keys import name_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--method", default="favor")
    ap.add_argument("--horizon", type=int, default=400, help="K: G_K and the bank's rollouts")
    ap.add_argument("--k", type=int, default=60, help="the most model steps before the bank answers")
    args = ap.parse_args()
    run = Path(args.run)
    cfg, p = open_run(run)
    obs, act = p.raw_points()
    model = p.expansion_model(run / "models", args.method)
    answers = {f"{args.method}+k{args.horizon}": set_answers(model, p, obs, act, args.horizon)["test"]}
    bcfg = BankConfig(points=AUTO_BANK_POINTS, horizon=args.horizon)
    starts = bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank"))
    ends = {}
    for a in (0.0, 1.0):
        model.bank = Bank(replace(bcfg, actions=a), starts).build(p.pi.model, p.source.policy)
        name = f"{args.method}+b{args.horizon}+k{args.k} actions={a:g}"
        answers[name] = set_answers(model, p, obs, act, args.k)["test"]                # (S, R, n_all)
        ends[name] = {kind: model.expansion(obs[rows], act[rows], args.k).ends for kind, rows in p.slices.items()}
    worst = {}                                                                           # kind -> row of y
    for kind, rows in p.slices.items():
        truth = p.sets["test"].truth.get(kind)                                           # (R, n_k)
        if truth is None:
            continue
        print(f"\n{kind} points ({len(truth[0])}), test rewards' squared error per point, seed 0:")
        print("| answer | MSE | without the worst point | worst point's share | worst point | its state | its steps |")
        print("|---|---|---|---|---|---|---|")
        for name, q in answers.items():
            err = ((q[0][:, rows] - truth) ** 2).mean(0)                                   # (n_k,)
            w = int(err.argmax())
            steps = ends[name][kind][w] if name in ends else args.horizon
            print(f"| {name} | {err.mean():.4g} | {np.delete(err, w).mean():.4g} | {err[w] / err.sum():.0%} | {w} "
                  f"| {np.round(obs[rows][w], 2).tolist()} | {steps} |")
            if name.endswith("actions=0"):
                worst[kind] = rows.start + w
    model.bank = Bank(replace(bcfg, actions=0.0), starts).build(p.pi.model, p.source.policy)
    reward_name, reward = p.source.rewards["test"][0]
    print(f"\nThe state-only bank answer's worst points: G_{args.horizon} ({reward_name}, seed 0) at the "
          f"nearest bank states to each kept member's state where it stopped")
    for kind, row in worst.items():
        ex = model.expansion(obs[row:row + 1], act[row:row + 1], args.k)
        print(f"{kind} point {np.round(obs[row], 3).tolist()}, {int(ex.ends[0])} steps:")
        for e in np.flatnonzero(ex.weights[:, 0] > 0):
            i, _ = model.bank.near(ex.obs[e:e + 1])                                        # (1, N)
            near = model.bank.states[i[0]]                                                 # (N, ds)
            model.bank, bank = None, model.bank
            g = model.q_values(reward, near, p.source.policy(near), seed=0, horizon=args.horizon)
            model.bank = bank
            far = np.linalg.norm((near - ex.obs[e]) / bank.scale, axis=1)
            print(f"  member {e}: distances {far.min():.2g}-{far.max():.2g}, G_K {np.round(g, 2).tolist()}")


if __name__ == "__main__":
    main()
