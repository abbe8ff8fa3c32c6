"""Where the bank with reach errs, point by point, with and without ``BankConfig.agree``: the
benchmark's new test reward at the 64 reset points of a finished run (seed 0), against the truth.

    python results/accuracy/bank/agree/points.py runs/main-job-17 > results/accuracy/bank/agree/points.txt

For G_400 and the bank (2048 states, reach 0.1) at each agree: the MSE, the median squared error,
the share of the MSE its 5 worst points hold and the mean model steps a point takes; then, at the
two worst points without agree, each member's step, weight and the values of its 8 nearest bank
states.
"""
from __future__ import annotations

import dataclasses
import sys

import jax
import numpy as np

import resolvent
from resolvent.algorithms.bank import Bank, bank_starts
from resolvent.experiments import open_run
from resolvent.keys import name_id


def main() -> None:
    run = sys.argv[1]
    cfg, p = open_run(run)
    name, reward = p.source.rewards["test"][0]
    truth, gt = np.asarray(p.sets["test"].truth["reset"][0]), p.source.gt
    model = resolvent.load(run, "fb+k400")
    model = dataclasses.replace(model, params=jax.tree_util.tree_map(lambda a: a[:1], model.params))
    bank_cfg = dataclasses.replace(cfg.bank, points=2048, reach=0.1)
    starts = bank_starts(p.features, bank_cfg, name_id(f"{cfg.seed}-bank"))
    print(f"{run}, reward {name}, {len(truth)} reset points, seed 0")
    worst = None
    for agree in (None, 0.0, 0.01, 0.03):
        model.bank = None if agree is None else Bank(dataclasses.replace(bank_cfg, agree=agree), starts).build(
            model.onestep, model.target_policy)
        err = (model.q_values(reward, gt.obs0, gt.action0, horizon=400) - truth) ** 2                # (n,)
        ex = model.expansion(gt.obs0, gt.action0, 400)
        steps = "" if ex.ends is None else f", {ex.ends.mean():.1f} model steps a point"
        label = "G_400" if agree is None else f"bank, agree {agree:g}"
        print(f"{label}: MSE {err.mean():.4f}, median {np.median(err):.2e}, the worst 5 points "
              f"{np.sort(err)[-5:].sum() / err.sum():.0%} of it{steps}")
        if agree == 0.0:
            worst = (np.argsort(-err)[:2], ex, model.bank)
    points, ex, bank = worst
    e, n = model.onestep.members, len(truth)
    values = bank.values(reward, model._tail(reward), model.gamma, model)[0]          # (B,)
    for i in points:
        print(f"point {i} (bank, agree 0): stopped at step {ex.ends[i]}")
        s_k = ex.obs.reshape(e, n, -1)[:, i]                                            # (E, ds)
        near, _ = bank.near(s_k)                                                        # (E, N)
        for m in range(e):
            print(f"  member {m}, weight {ex.weights[m, i]:.2f}: its nearest bank states' values "
                  f"{' '.join(f'{v:.1f}' for v in values[near[m]])}")


if __name__ == "__main__":
    main()
