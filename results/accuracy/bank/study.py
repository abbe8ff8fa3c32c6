"""The data's bank (``resolvent/algorithms/bank.py``, ``METHOD+bK+kk``) on a finished run: the
operator, its expansions G_k and G_K, and k model steps with the bank as the tail, for every
reward set and kind of points, side by side, with the seconds each set of answers took.

    python results/accuracy/bank/study.py RUN --methods favor,fb [--points 2048] [--horizon 400]
        [--bank-steps 100] [--neighbours 1,8] [--eps 0,1] [--reach 0,0.1] [--actions 0,1] [--tails 1,10,30]
        [--query-members 1,3]
        --out results/accuracy/bank/NAME.json

The bank is rolled out from the run's own starting states (those ``resolvent evaluate --bank.points``
would save) once per operator and neighbour count (its seconds in ``bank_seconds``); ``seconds``
is every reward set's answers at every kind of points, shared among the tails (one reward's
values along the bank serve every k). Every row is written as it comes.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from resolvent.algorithms.bank import Bank, BankConfig, bank_starts
from resolvent.algorithms.expansion import Rollouts
from resolvent.experiments import open_run
from resolvent.experiments.evaluate import horizon_answers, set_answers
from resolvent.experiments.scoring import entry_of, score
from resolvent.keys import name_id

SHOWN = tuple(f"{kind}{s}_{m}" for kind in ("", "traj_", "data_") for s, m in (
    ("test", "mse"), ("test", "r2"), ("train", "mse"), ("probe", "r2")))   # (a dataset of one's own: its reward, train)


def first_members(onestep, m: int):
    """The one-step ensemble's first m members (m = 1: a single model, its leading axis dropped)."""
    cut = (lambda a: a[0]) if m == 1 else (lambda a: a[:m])  # noqa: E731
    return onestep._replace(params=jax.tree_util.tree_map(cut, onestep.params))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--methods", default="favor,fb")
    ap.add_argument("--points", type=int, default=2048, help="P: the data's states the bank rolls out from")
    ap.add_argument("--horizon", type=int, default=400, help="K: the bank's rollouts' steps (and the G_K shown)")
    ap.add_argument("--bank-steps", type=int, default=100, help="T: the steps of each rollout kept as bank states")
    ap.add_argument("--neighbours", default="1,8")
    ap.add_argument("--eps", default="0", help="the search's eps (BankConfig.eps), comma-separated")
    ap.add_argument("--reach", default="0", help="BankConfig.reach (0: every point k steps), comma-separated")
    ap.add_argument("--actions", default="0", help="BankConfig.actions (0: by state alone), comma-separated")
    ap.add_argument("--tails", default="1,10,30", help="k: model steps before the bank answers (with reach: the most)")
    ap.add_argument("--query-members", default="",
                    help="also the bank after k steps of only the first m members at the points (m, comma-separated)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run, path = Path(args.run), Path(args.out)
    cfg, p = open_run(run)
    obs, act = p.raw_points()
    tails = [int(k) for k in args.tails.split(",")]
    out: dict = {"run": str(run), "args": vars(args), "rows": {}}

    def row(label: str, pred: dict, seconds: float, **more) -> None:   # printed, and the file rewritten
        entry = entry_of(score(pred, p), p)
        out["rows"][label] = {**{k: float(np.mean(entry[k])) for k in SHOWN if k in entry},
                              "seconds": round(seconds, 2), **more}
        print(label, json.dumps(out["rows"][label]), flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1))

    rollouts, starts = Rollouts(), None
    for name in args.methods.split(","):
        model = p.expansion_model(run / "models", name, rollouts)
        for k in sorted({0, *tails, args.horizon}):
            t0 = time.perf_counter()
            row(f"{name}+k{k}", set_answers(model, p, obs, act, k), time.perf_counter() - t0)
        for n, eps, reach, acts in ((int(x), float(e), float(r), float(a)) for x in args.neighbours.split(",")
                                    for e in args.eps.split(",") for r in args.reach.split(",")
                                    for a in args.actions.split(",")):
            bcfg = BankConfig(points=args.points, horizon=args.horizon, steps=args.bank_steps, neighbours=n, eps=eps,
                              reach=reach, actions=acts)
            if starts is None:
                starts = bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank"))
            t0 = time.perf_counter()
            model.bank = Bank(bcfg, starts).build(p.pi.model, p.source.policy)
            built = time.perf_counter() - t0
            t0 = time.perf_counter()
            answers = horizon_answers(model, p, obs, act, tails)
            seconds = time.perf_counter() - t0
            for k in tails:
                row(f"{name}+b{args.horizon}+k{k} n={n}" + (f" eps={eps:g}" if eps else "")
                    + (f" reach={reach:g}" if reach else "") + (f" actions={acts:g}" if acts else ""), answers[k],
                    seconds / len(tails),
                    bank_seconds=round(built, 2), bank_states=len(model.bank))
            for m in (int(x) for x in args.query_members.split(",") if x):
                model.onestep, model.rollouts = first_members(p.pi.model, m), Rollouts()
                t0 = time.perf_counter()
                answers = horizon_answers(model, p, obs, act, tails)
                seconds = time.perf_counter() - t0
                for k in tails:
                    row(f"{name}+b{args.horizon}+k{k} n={n}, {m} member(s) at the points", answers[k],
                        seconds / len(tails))
                model.onestep, model.rollouts = p.pi.model, rollouts
            model.bank = None

if __name__ == "__main__":
    main()
