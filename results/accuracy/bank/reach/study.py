"""Each point's own number of model steps before the bank answers: stop where the rollout's state
is near the bank. A prototype on a finished run, before the product has it.

    python results/accuracy/bank/reach/study.py RUN --methods favor [--kmax 30] [--pairs 2000] [--ahead 64]
        [--ahead-scale 1]
        --out results/accuracy/bank/reach/NAME.json

For every point (s, a), k_i is the first step t >= ``kmin`` whose state s_t lies within ``delta``
of the bank (the kept members' mean distance to their N nearest bank states, in the data's
standardised units) and, with ``--ahead`` H, whose neighbours stay within ``--ahead-scale`` x
delta of their mean state for H steps along their own rollouts, else ``kmax``; its answer is
B_{k_i}. The answers for every k (1..kmax) come from one rollout; a rule is scored by picking
each point's k. ``mean_k`` per kind of points, and
at ``--pairs`` of the dataset's own state-actions (the benchmark's new points), is the cost.
delta is in the data's standardised units (the bank's states converge: the median distance from
a bank state to its N nearest of other rollouts', ``spacing`` here, is far below any useful delta).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from resolvent.algorithms.bank import Bank, BankConfig, bank_starts
from resolvent.algorithms.expansion import expand
from resolvent.experiments import open_run
from resolvent.experiments.evaluate import horizon_answers
from resolvent.experiments.scoring import entry_of, score
from resolvent.keys import name_id

SHOWN = tuple(f"{kind}{s}_{m}" for kind in ("", "traj_", "data_") for s, m in (
    ("test", "mse"), ("train", "mse"), ("probe", "r2")))


def row_writer(out: dict, path: Path, p, shown: tuple[str, ...]) -> Callable[..., None]:
    """``row(label, answers, **more)``: the answers' scores ``shown`` (means over the network
    seeds) and ``more`` as ``out["rows"][label]``, printed, and ``out`` written to ``path`` again:
    every row kept as it comes."""
    def row(label: str, pred: dict, **more) -> None:
        entry = entry_of(score(pred, p), p)
        out["rows"][label] = {**{k: float(np.mean(entry[k])) for k in shown if k in entry}, **more}
        print(label, json.dumps(out["rows"][label]), flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1))
    return row


def distances(bank: Bank, onestep, policy, obs, act, kmax: int, ahead: int) -> tuple[np.ndarray, np.ndarray]:
    """(kmax + 1, n) twice, at each step of the rollout (row 0: the query state itself): each
    point's kept members' mean distance to their N nearest bank states, and (``ahead`` > 0) how far
    those neighbours drift apart along their own rollouts over the next ``ahead`` steps (the most,
    over 1, 2, 4, ... steps on, of their mean distance to their mean state; kept members' mean)."""
    ex = expand(onestep, policy, obs, act, kmax)
    states = np.concatenate([ex.steps["obs"], ex.obs[None]])                     # (kmax + 1, E n, ds)
    w = ex.weights                                                                # (E, n) the kept members
    out, apart = np.empty((kmax + 1, len(obs))), np.zeros((kmax + 1, len(obs)))
    n = min(bank.cfg.neighbours, len(bank))
    mp, ds = bank.rollout.alive.shape[1], states.shape[-1]
    flat = bank.rollout.steps["obs"].reshape(-1, ds)                              # (K m P, ds) steps 0..K-1
    for t, s in enumerate(states):
        d, i = bank.tree.query(s / bank.scale, k=n, eps=bank.cfg.eps, workers=-1)   # (E n, N)
        out[t] = (d.reshape(*w.shape, -1).mean(-1) * w).sum(0)
        h = 1
        while ahead and h <= ahead:
            there = flat[np.minimum(bank.rows[i] + (1 + h) * mp, len(flat) - 1)] / bank.scale   # (E n, N, ds)
            spread = np.linalg.norm(there - there.mean(1, keepdims=True), axis=-1).mean(-1)   # (E n,)
            apart[t] = np.maximum(apart[t], (spread.reshape(w.shape) * w).sum(0))
            h *= 2
    return out, apart


def spacing(bank: Bank, rng: np.random.Generator) -> float:
    """The median distance from 4096 bank states to their N nearest bank states (themselves and
    their own rollout's neighbours excluded: 4 N asked, the first N of other rollouts kept)."""
    pick = rng.choice(len(bank), min(4096, len(bank)), replace=False)
    n = min(bank.cfg.neighbours, len(bank))
    m = bank.rollout.alive.shape[1]                                               # rollouts of the bank
    rollout_of = bank.rows % m                                                    # (B,) the rollout of each bank state
    d, i = bank.tree.query(bank.states[pick] / bank.scale, k=8 * n, eps=bank.cfg.eps, workers=-1)
    other = rollout_of[i] != rollout_of[pick][:, None]                            # (4096, 8 N)
    means = [di[o][:n].mean() for di, o in zip(d, other) if o.sum() >= n]
    return float(np.median(means))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--methods", default="favor")
    ap.add_argument("--points", type=int, default=2048)
    ap.add_argument("--kmax", type=int, default=30)
    ap.add_argument("--kmins", default="1,3,5")
    ap.add_argument("--deltas", default="0.0001,0.0003,0.001,0.003,0.01,0.03,0.1")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--ahead", type=int, default=0,
                    help="also require the neighbours to stay within delta of each other this many steps on (0: not)")
    ap.add_argument("--ahead-scale", type=float, default=1.0,
                    help="the neighbours' drift allowed, in deltas (with --ahead)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run, path = Path(args.run), Path(args.out)
    cfg, p = open_run(run)
    obs, act = p.raw_points()
    bcfg = BankConfig(points=args.points, reach=0.0)          # every point k steps: the rules pick among them
    starts = bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank"))
    t0 = time.perf_counter()
    bank = Bank(bcfg, starts).build(p.pi.model, p.source.policy)
    out: dict = {"run": str(run), "args": vars(args), "bank_seconds": round(time.perf_counter() - t0, 2), "rows": {}}
    gap = spacing(bank, np.random.default_rng(0))
    out["spacing"] = gap
    st = bank.rollout.steps["obs"][:bcfg.steps + 1] / bank.scale                       # (T + 1, m P, ds)
    out["step_quantiles"] = np.quantile(np.linalg.norm(np.diff(st, axis=0), axis=-1), [0.1, 0.5, 0.9]).tolist()
    dist, drift = distances(bank, p.pi.model, p.source.policy, obs, act, args.kmax, args.ahead)# (kmax + 1, n_all)
    rng = np.random.default_rng(1)
    pick = rng.choice(len(p.features["obs"]), min(args.pairs, len(p.features["obs"])), replace=False)
    pairs, pairs_drift = distances(bank, p.pi.model, p.source.policy, np.asarray(p.features["obs"])[pick],
                                   np.asarray(p.features["action"])[pick], args.kmax, args.ahead)    # (kmax + 1, pairs)
    out["distance_quantiles"] = {kind: np.quantile(dist[:, rows], [0.1, 0.5, 0.9], axis=1).tolist()
                                 for kind, rows in p.slices.items()}
    out["pairs_distance_quantiles"] = np.quantile(pairs, [0.1, 0.5, 0.9], axis=1).tolist()
    ks = list(range(1, args.kmax + 1))

    row = row_writer(out, path, p, SHOWN)

    for name in args.methods.split(","):
        model = p.expansion_model(run / "models", name)
        model.bank = bank
        answers = horizon_answers(model, p, obs, act, ks)                  # {k: {set: (S, R, n)}}
        for k in (1, 3, 5, 10, 20, 30):
            if k <= args.kmax:
                row(f"{name}+b400+k{k}", answers[k], mean_k={kind: k for kind in p.slices}, pairs_k=k)
        for kmin in (int(x) for x in args.kmins.split(",")):
            for delta in (float(x) for x in args.deltas.split(",")):
                def stop(d, a):                                              # (kmax + 1, n) twice -> (n,) k_i
                    near = (d[kmin:] <= delta) & (a[kmin:] <= args.ahead_scale * delta)
                    return np.where(near.any(0), kmin + near.argmax(0), args.kmax)
                k_i = stop(dist, drift)
                pred = {s: np.take_along_axis(np.stack([answers[k][s] for k in ks]),     # (kmax, S, R, n)
                                              (k_i - 1)[None, None, None], 0)[0] for s in answers[ks[0]]}
                row(f"{name}+b400+reach kmin={kmin} delta={delta:g}"
                    + (f" ahead={args.ahead} x{args.ahead_scale:g}" if args.ahead else ""), pred,
                    mean_k={kind: float(k_i[rows].mean()) for kind, rows in p.slices.items()},
                    pairs_k=float(stop(pairs, pairs_drift).mean()))


if __name__ == "__main__":
    main()
