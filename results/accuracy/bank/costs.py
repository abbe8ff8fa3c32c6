"""What the bank costs on a finished run, part by part, at 1e4 new points (warm medians, the
benchmark's ``warm_ms``; run from the repository root): the bank
itself (its rollout and tree, once), a new reward's values along it, the nearest bank states to
every member's s_k, and the k-step rollout from the points; with ``--reach``, the rollout whose
points stop where the bank reaches them (``BankConfig.reach``, at most k steps: ``steps`` the mean).

    python results/accuracy/bank/costs.py RUN [--method favor] [--points 2048] [--pairs 10000]
        [--horizons 10,30] [--repeats 3] [--eps 0,1] [--reach 0.1] --out results/accuracy/bank/NAME-costs.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from resolvent.algorithms.bank import Bank, BankConfig, bank_starts
from resolvent.algorithms.expansion import expand
from resolvent.experiments import open_run
from resolvent.keys import name_id

sys.path.insert(0, "benchmarks")
from zero_shot import warm_ms  # noqa: E402  (benchmarks/ is not a package)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--method", default="favor")
    ap.add_argument("--points", type=int, default=2048)
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--horizons", default="10,30")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eps", default="0", help="the search's eps (BankConfig.eps), comma-separated: each timed")
    ap.add_argument("--reach", default="", help="BankConfig.reach, comma-separated: each rollout timed")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run = Path(args.run)
    cfg, p = open_run(run)
    model = p.expansion_model(run / "models", args.method)
    bcfg = BankConfig(points=args.points, reach=0.0)
    starts = bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank"))
    t0 = time.perf_counter()
    bank = Bank(bcfg, starts).build(p.pi.model, p.source.policy)
    out = {"run": str(run), "method": args.method, "points": args.points, "bank_states": len(bank),
           "bank_ms": round(1e3 * (time.perf_counter() - t0), 1),
           "bank_bytes": int(sum(v.nbytes for v in bank.rollout.steps.values() if v.base is None)
                             + bank.rollout.steps["obs"].base.nbytes + bank.states.nbytes),
           "state_dims": int(starts.shape[1]), "pairs": args.pairs}
    _, reward = p.source.rewards["test" if p.source.rewards["test"] else "train"][0]

    def operator(s, a):
        return model._q(reward, s, a)

    def values():                       # a new reward each call: nothing kept
        bank._values = None
        return bank.values(reward, operator, model.gamma, owner=model)

    out["values_ms"] = round(warm_ms(values, args.repeats), 1)
    idx = np.random.default_rng(0).choice(len(p.features["obs"]), min(args.pairs, len(p.features["obs"])),
                                          replace=False)
    obs, act = np.asarray(p.features["obs"])[idx], np.asarray(p.features["action"])[idx]
    for k in (int(x) for x in args.horizons.split(",")):
        out[f"rollout_ms_k{k}"] = round(warm_ms(lambda: expand(p.pi.model, p.source.policy, obs, act, k),
                                                args.repeats), 1)
        s_k = expand(p.pi.model, p.source.policy, obs, act, k).obs                 # (E n, ds)
        for eps in (float(e) for e in args.eps.split(",")):
            bank.cfg = dataclasses.replace(bcfg, eps=eps)
            out[f"near_ms_k{k}" + (f"_eps{eps:g}" if eps else "")] = round(
                warm_ms(lambda: bank.neighbours_of(s_k), args.repeats), 1)
        for reach in (float(r) for r in args.reach.split(",") if r):
            bank.cfg, tag = dataclasses.replace(bcfg, reach=reach), f"reach{reach:g}"
            out[f"{tag}_rollout_ms_k{k}"] = round(warm_ms(lambda: expand(p.pi.model, p.source.policy, obs, act, k,
                                                                           bank.until(cfg.gamma)), args.repeats), 1)
            ex = expand(p.pi.model, p.source.policy, obs, act, k, bank.until(cfg.gamma))
            out[f"{tag}_steps_k{k}"] = round(float(ex.ends.mean()), 2)
            out[f"{tag}_near_ms_k{k}"] = round(warm_ms(lambda: bank.neighbours_of(ex.obs), args.repeats), 1)
        bank.cfg = bcfg
    print(json.dumps(out), flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
