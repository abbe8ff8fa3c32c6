"""A lead for with_bank's guard, measured and not adopted: the bank's own interpolation error,
leave-one-rollout-out (each of 4000 bank states answered by its 8 nearest bank states of other
rollouts, weights 1 / distance; "close": those whose mean distance is within the bank's reach),
against D, the RMS difference between the bank answer and auto's pick at the trust report's
points, per held-out reward (each one's RMS difference from per-reward FQE beside them). The
idea: where D is no larger than the bank's own noise, the bank answer is the pick plus
interpolation noise, and the pick should stay.

    python results/accuracy/bank/loo/loo.py RUN OPERATOR PICK BANK_ANSWER

``loo.txt``: runs/pa-auto-bank favor favor+k400 favor+b400+k30 (the bank worse),
runs/par-bank-trust favor favor+k400 favor+b400+k60 (worse along the trajectories) and
runs/hcn-bank-trust fb fb+k400 fb+b400+k10 (better).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from resolvent.algorithms.bank import AUTO_BANK_POINTS, Bank, BankConfig, bank_starts
from resolvent.experiments import open_run
from resolvent.keys import name_id

SAMPLES, NEAR, SEARCHED = 4000, 8, 40


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x ** 2))) if x.size else float("nan")


def main() -> None:
    run, name, pick, banked = Path(sys.argv[1]), *sys.argv[2:5]
    cfg, p = open_run(run)
    model = p.expansion_model(run / "models", name)
    bcfg = BankConfig(points=AUTO_BANK_POINTS)
    bank = Bank(bcfg, bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank"))).build(p.pi.model, p.source.policy)
    mp = bank.rollout.alive.shape[1]                                                    # m P rollouts
    sample = np.random.default_rng(0).choice(len(bank.rows), SAMPLES, replace=False)
    d, i = bank.tree.query(bank.path[bank.rows[sample]], k=SEARCHED, workers=-1)        # (n, 40)
    other = bank.rows[i] % mp != (bank.rows[sample] % mp)[:, None]                      # another rollout's
    first = np.argsort(~other, axis=1, kind="stable")[:, :NEAR]                         # its 8 nearest of them
    i, d = np.take_along_axis(i, first, 1), np.take_along_axis(d, first, 1)             # (n, 8)
    ok = np.take_along_axis(other, first, 1).all(1)
    close = ok & (d.mean(1) <= bcfg.reach * bank.step)
    w = 1.0 / np.maximum(d, 1e-9)
    w /= w.sum(1, keepdims=True)
    print(f"{run.name}: {pick} against {banked}; {ok.mean():.0%} of the samples with 8 others found, "
          f"{close.mean():.0%} within reach (median mean distance {np.median(d.mean(1)):.2g}, reach "
          f"{bcfg.reach * bank.step:.2g})")
    print("| held-out reward | D | bank LOO | bank LOO, close | pick vs FQE | bank answer vs FQE |")
    print("|---|---|---|---|---|---|")
    with np.load(run / "predictions.npz") as z:
        a, b, fqe = (z[f"{m}|heldout|trust|{what}"] for m, what in ((pick, "pred"), (banked, "pred"), (pick, "truth")))
    rows = []
    for j, (reward_name, reward) in enumerate(p.source.rewards["heldout"]):
        v = bank.values(reward, lambda o, act, r=reward: model._q(r, o, act), model.gamma, owner=model).mean(0)  # (B,)
        err = (v[i] * w).sum(1) - v[sample]                                              # (n,)
        rows.append((rms(b[j] - a[j]), rms(err[ok]), rms(err[close]), rms(a[j] - fqe[j]), rms(b[j] - fqe[j])))
        print(f"| {reward_name} | " + " | ".join(f"{x:.3g}" for x in rows[-1]) + " |")
    r = np.array(rows)
    print("| mean | " + " | ".join(f"{x:.3g}" for x in r.mean(0)) + " |")
    print(f"median D / LOO {np.median(r[:, 0] / r[:, 1]):.2f}, D / LOO close {np.nanmedian(r[:, 0] / r[:, 2]):.2f}\n")


if __name__ == "__main__":
    main()
