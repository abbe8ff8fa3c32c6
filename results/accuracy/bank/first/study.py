"""The first measurement of the bank, a prototype of ``resolvent/algorithms/bank.py`` (its bank
states from step 0, and a "residual" variant, V = G + the neighbours' mean of V_i - G(x_i)): what
made the files beside it.

At fit time the one-step model is rolled out K steps under pi from P of the data's states (every
member its own) and the states x_t = (s_t, pi(s_t)), t < T, kept: the bank. A new reward r gets
every bank state's value from the rest of its own rollout (``along_q``: G_{K-t}[r](x_t)), and a
new point (s, a) its answer from j steps of the one-step model and the bank's values near s_j:

    B_j[r](s, a) = sum_e w_e (sum_{t<j} gamma^t c_t r(x^e_t) + gamma^j c_j V_bank[r](s^e_j))
    V_bank[r](s') = sum_i k_i(s') V_i[r] / sum_i k_i(s'),   the n nearest bank states, k_i = 1 / d_i

(d_i: distance in the data's standardised states). The neighbours and their weights depend on
the points only, not on the reward; a new reward costs the reward along the bank's rollouts and
one gather. Scored against the truth beside the operator, G_k and the teacher's G_K.

    python results/accuracy/bank/first/study.py RUN --method favor --out results/accuracy/bank/NAME.json
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy.spatial import cKDTree

from resolvent.algorithms.expansion import Rollouts, along_q, expanded_q
from resolvent.experiments import open_run
from resolvent.experiments.evaluate import set_answers
from resolvent.experiments.problem import SETS
from resolvent.experiments.scoring import entry_of, score

SHOWN = ("test_mse", "test_r2", "probe_r2", "traj_test_mse", "traj_test_r2", "traj_probe_r2", "data_test_mse",
         "data_test_r2", "data_probe_r2")


def shown(p, answers: dict) -> dict:
    entry = entry_of(score(answers, p), p)
    return {k: float(np.mean(entry[k])) for k in SHOWN if k in entry}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--method", default="favor")
    ap.add_argument("--bank-points", type=int, default=1024, help="P: the data's states the bank rolls out from")
    ap.add_argument("--bank-horizon", type=int, default=400, help="K: the bank's rollouts' length")
    ap.add_argument("--bank-steps", type=int, default=100, help="T: the steps of each rollout kept as bank states")
    ap.add_argument("--neighbours", default="1,8,32")
    ap.add_argument("--steps", default="1,10,30", help="j: model steps before the bank answers")
    ap.add_argument("--horizon", type=int, default=400, help="the teacher's G_K, for comparison")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run, out_path = Path(args.run), Path(args.out)
    _, p = open_run(run)
    obs, act = p.raw_points()
    ds = obs.shape[1]
    model = p.expansion_model(run / "models", args.method)
    out: dict = {"run": str(run), "method": args.method, "args": vars(args), "rows": {}}

    def row(label: str, values: dict) -> None:
        out["rows"][label] = values
        print(label, json.dumps(values), flush=True)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(out, indent=1))

    for k in (0, 30, args.horizon):
        t0 = time.perf_counter()
        pred = set_answers(model, p, obs, act, k)
        row(f"{args.method}+k{k}", {**shown(p, pred), "seconds": time.perf_counter() - t0})

    # the bank: rolled out once, before any reward
    data_obs, data_next = np.asarray(p.features["obs"]), np.asarray(p.features["next_obs"])
    starts = np.flatnonzero(np.r_[True, np.any(data_obs[1:] != data_next[:-1], 1)])   # the episodes' first states
    rng = np.random.default_rng(0)
    first = rng.choice(starts, min(len(starts), args.bank_points // 2), replace=False)
    rest = rng.choice(len(data_obs), args.bank_points - len(first), replace=False)
    b_obs = data_obs[np.r_[first, rest]]
    print(f"bank from {len(first)} of the data's {len(starts)} episode starts and {len(rest)} other states", flush=True)
    b_act = np.asarray(p.source.policy(b_obs))
    t0 = time.perf_counter()
    bank = Rollouts()
    ex = bank.get(model.onestep, model.target_policy, b_obs, b_act, args.bank_horizon)
    ts = tuple(range(args.bank_steps))
    states = ex.steps["obs"][list(ts)].reshape(-1, ds)                       # (T E P, ds)
    acts = ex.steps["action"][list(ts)].reshape(len(states), -1)             # (T E P, da) pi(s_t), t >= 1
    scale = np.asarray(model.onestep.x_std[:ds])
    tree = cKDTree(states / scale)
    rollout_s = time.perf_counter() - t0
    print(f"bank: {len(states)} states, rollout + tree {rollout_s:.1f} s", flush=True)

    def bank_values(reward) -> np.ndarray:   # (S, T E P): G_{K-t}[r] at every bank state
        v = along_q(ex, reward, lambda s, a: model._q(reward, s, a), model.gamma, ts)   # (S, T, E P)
        return v.reshape(v.shape[0], -1)

    for j in [int(x) for x in args.steps.split(",")]:
        for nn in [int(x) for x in args.neighbours.split(",")]:
            for how in ("bank", "residual"):
                t0 = time.perf_counter()
                answers, near = {}, {}
                for s in SETS:
                    if not len(p.sets[s]):
                        continue
                    per = []
                    for _, r in p.source.rewards[s]:
                        values = bank_values(r)                                  # (S, B)

                        def lookup(so, ao, values=values, r=r):
                            if so.shape not in near:      # the neighbours: the same for every reward
                                d, i = tree.query(so / scale, k=nn)
                                d, i = d.reshape(len(so), -1), i.reshape(len(so), -1)
                                w = 1.0 / np.maximum(d, 1e-6)
                                near[so.shape] = (i, w / w.sum(1, keepdims=True))
                            i, w = near[so.shape]
                            v = np.nan_to_num(values[:, i])                      # (S, rows, nn)
                            if how == "bank":
                                return (v * w).sum(-1)
                            g_nn = model._q(r, states[i.reshape(-1)], acts[i.reshape(-1)]).reshape(v.shape)
                            return model._q(r, so, ao) + ((v - g_nn) * w).sum(-1)

                        per.append(expanded_q(model.expansion(obs, act, j), r, lookup, model.gamma))
                    answers[s] = np.stack(per, 1)                                  # (S, R, n)
                row(f"{how} j={j} n={nn}", {**shown(p, answers), "seconds": time.perf_counter() - t0,
                                            "bank_states": len(states), "bank_seconds": rollout_s})

if __name__ == "__main__":
    main()
