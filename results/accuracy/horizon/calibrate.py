"""The model's error under pi for kauto's rule: the data's stretches against the ensemble's spread (a study).

    python results/accuracy/horizon/calibrate.py RUN [--oracle PROBE_VS_ORACLE.md] [--out ROWS.jsonl]

RUN is a finished ``resolvent evaluate`` run with horizons and two or more operators (what
``METHOD+kauto`` needs). kauto's rule (``algorithms/horizon.py``) is

    k*(r) = argmin_k  e_model(r, k) + gamma^(2k) e_op(r)

and this script scores four e_model, each reward's choice against the truth:

- ``ops``: the model's error along the data's own stretches, the behaviour's deviation from pi
  replayed (``horizon.model_errors``; the first rule). Where the behaviour is far from pi or its
  stretches are chaotic, that error is larger than the model's under pi from the query points;
- ``spread``: v_pi(r, k), the kept members' spread of the first k steps' sum under pi at the
  query points (``horizon.member_spread``, the rule the product now uses; the script checks
  that ``choose_horizon`` picks as this column),

      v(k) = mean_points sum_e w_e (h_e(k) - sum_e' w_e' h_e'(k))^2,   h_e(k) = sum_{t<k} gamma^t c_t r(x^e_t)

- ``cal``: ``ops`` carried over to pi by the spread's ratio, e_model v_pi / v_data (v_data the
  same spread along the stretches);
- ``cal_med``: the same with the ratio of medians over the stretches, median_i err_i /
  median_i v_i, times v_pi (robust to the one stretch of 100 that carries Pendulum's error).

Prints each rule's choices, the mean MSE over each reward set (fixed k, each rule, hindsight)
per operator and kind of points, and with ``--oracle`` (a probe-vs-oracle.md whose "FQE oracle
(its MSE)" rows hold per-reward FQE's MSE at the same points) every probe's MSE over FQE's.
"""
from __future__ import annotations

import argparse
import json

import numpy as np

from resolvent.algorithms.expansion import Expansion
from resolvent.algorithms.horizon import data_sums, find_stretches, member_spread, model_errors, validate
from resolvent.experiments import open_run
from resolvent.model import load

SETS = ("train", "test", "probe")


def per_point(exp: Expansion, sums: np.ndarray, horizons, truth: np.ndarray | None = None) -> tuple:
    """Per point and horizon (K, n): the kept members' weighted variance of their first k steps'
    sum and, with ``truth`` (k, n) the data's running sums, the squared error of their mean."""
    k_max, n = exp.horizon, exp.apart.shape[2]
    var, err = np.zeros((len(horizons), n)), np.zeros((len(horizons), n))
    for i, k in enumerate(horizons):
        j = min(k, k_max)
        if j == 0:
            continue
        w = exp.prefix(j).weights                                                      # (E, n)
        h = sums[j - 1].reshape(w.shape)                                               # (E, n)
        mean = (w * h).sum(0)
        var[i] = (w * (h - mean) ** 2).sum(0)
        if truth is not None:
            err[i] = (mean - truth[j - 1]) ** 2
    return var, err


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--out", default=None, help="a JSON line per reward")
    ap.add_argument("--oracle", default=None, help="a probe-vs-oracle.md whose 'FQE oracle (its MSE)' rows give "
                    "per-reward FQE's MSE at the same points: then every probe's ratio to it")
    args = ap.parse_args()
    cfg, p = open_run(args.run)
    first = load(args.run, f"{[m for m in cfg.methods if m != 'fqe'][0]}+kauto")
    first.onestep = p.pi.model
    horizons = (0, *first.horizons)
    gamma = first.gamma
    raw = np.asarray(p.y) * p.x_std + p.x_mean
    ds = p.features["obs"].shape[1]
    obs, act = raw[:, :ds], raw[:, ds:]
    if first.stretches is None:   # an ensemble's run saves none (its spread is its check): the first rule's, drawn here
        first.stretches = find_stretches(p.features, max(horizons), cfg.stretches or 256, cfg.seed)
    check = validate(first.onestep, first.target_policy, first.stretches)
    exp = first.expansion(obs, act, max(horizons))
    models = (first, *first.peers)
    for m in first.peers:
        m.onestep, m.target_policy, m.rollouts = first.onestep, first.target_policy, first.rollouts
    rows = []
    for s in SETS:
        if not len(p.sets[s].names):
            continue
        for name, r in p.source.rewards[s]:
            answers = np.stack([m.q_values(r, obs, act, seed=None, horizon=0).mean(0) for m in models])  # (M, n)
            e_op = float(answers.var(0).mean())
            e_model = model_errors(check, first.stretches, r, horizons, gamma)
            running = check.sums_at(r, gamma, "rollout", range(1, check.horizon + 1))     # (L, E S)
            var_data, err_data = per_point(check, running, horizons, data_sums(first.stretches, r, gamma))  # (K, S)
            v_pi = member_spread(exp, r, horizons, gamma)                              # (K,)
            v_data = var_data.mean(1)
            with np.errstate(divide="ignore", invalid="ignore"):
                cal = np.where(v_data > 0, e_model * v_pi / v_data, 0.0)
                ratio = np.median(err_data, 1) / np.median(var_data, 1)
                cal_med = np.where(np.median(var_data, 1) > 0, ratio * v_pi, 0.0)
            decay = gamma ** (2.0 * np.asarray(horizons))
            pick = {rule: int(np.argmin(e + decay * e_op))
                    for rule, e in (("ops", e_model), ("cal", cal), ("cal_med", cal_med), ("spread", v_pi))}
            product = first.choose_horizon(r, obs, act)    # the product's kauto: the spread's choice
            assert product == horizons[pick["spread"]], (name, product, horizons[pick["spread"]])
            mse = {}
            for m in models:
                q = np.stack([m.q_values(r, obs, act, seed=None, horizon=k) for k in horizons], 1)  # (S, K, n)
                split = p.split(q[:, :, None])                                     # kind -> (S, K, 1, n_k)
                for kind, qk in split.items():
                    truth = p.sets[s].truth.get(kind)
                    if truth is None:
                        continue
                    i = p.sets[s].names.index(name)
                    mse[f"{m.method}|{kind}"] = ((qk[:, :, 0] - truth[i][None, None]) ** 2).mean((0, 2)).tolist()
            rows.append({"set": s, "reward": name, "horizons": list(horizons), "e_op": e_op,
                         "e_model": e_model.tolist(), "v_data": v_data.tolist(), "v_pi": v_pi.tolist(),
                         "cal_med": cal_med.tolist(),
                         "pick": {k: horizons[v] for k, v in pick.items()}, "mse": mse})
            print(f"{s:5s} {name:24s} k: " + " ".join(f"{k} {horizons[v]:3d}" for k, v in pick.items()), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    summarise(rows, horizons)
    if args.oracle:
        against_oracle(rows, horizons, args.oracle)


def summarise(rows: list[dict], horizons) -> None:
    """Mean MSE over each set's rewards, per operator and kind: fixed k, each rule, hindsight."""
    for s in SETS:
        mine = [row for row in rows if row["set"] == s]
        if not mine:
            continue
        for key in mine[0]["mse"]:
            table = np.asarray([row["mse"][key] for row in mine])                      # (R, K)
            cells = [f"k{k} {v:.3g}" for k, v in zip(horizons, table.mean(0))]
            for rule in mine[0]["pick"]:
                chosen = [table[i, horizons.index(row["pick"][rule])] for i, row in enumerate(mine)]
                cells.append(f"{rule} {np.mean(chosen):.3g}")
            cells.append(f"hindsight {table.min(1).mean():.3g}")
            print(f"{s:5s} {key:18s} " + "  ".join(cells))


def oracle_mse(path: str) -> dict:
    """{kind: {probe: FQE's MSE}} from a probe-vs-oracle.md table."""
    lines = [line.strip().strip("|").split("|") for line in open(path) if line.startswith("|")]
    names = [c.strip() for c in lines[0][2:]]
    out = {}
    for cells in lines:
        if cells[0].strip() == "FQE oracle (its MSE)":
            out[cells[1].strip()] = {n: float(v) for n, v in zip(names, cells[2:]) if v.strip()}
    return out


def against_oracle(rows: list[dict], horizons, path: str) -> None:
    """Every probe's MSE over FQE's, per operator and kind: k = 400, each rule, hindsight."""
    fqe = oracle_mse(path)
    probes = [row for row in rows if row["set"] == "probe"]
    for key in probes[0]["mse"]:
        kind = key.split("|")[1]
        if kind not in fqe:
            continue
        table = np.asarray([row["mse"][key] for row in probes]) / np.asarray(
            [fqe[kind][row["reward"]] for row in probes])[:, None]                     # (P, K)
        cols = {f"k{horizons[-1]}": table[:, -1], **{
            rule: np.asarray([table[i, horizons.index(row["pick"][rule])] for i, row in enumerate(probes)])
            for rule in probes[0]["pick"]}, "hindsight": table.min(1)}
        for label, v in cols.items():
            print(f"{key:18s} {label:9s} " + " ".join(f"{x:6.2f}" for x in v)
                  + f"   within 1.5x {int((v <= 1.5).sum())}/{len(v)}  worst {v.max():.2f}")


if __name__ == "__main__":
    main()
