"""Choosing the expansion's horizon k per reward without ground truth: a study.

    python results/accuracy/horizon/choose.py RUN ORACLE_RUN ONESTEP.npz ANSWERS.npz [--starts 256]

RUN is a finished evaluate run, ORACLE_RUN its per-reward FQE run on the probes (same points),
ONESTEP.npz and ANSWERS.npz from ``benchmarks/expansion.py RUN --onestep-file ... --predictions
...``. Two reference-free signals per probe reward r:

- the model's error on the data's own trajectories: from ``--starts`` states of the data with
  400 continuous steps after them, every member rolls out, and
      e_model(r, k) = mean_i (sum_{t<k} gamma^t (r(x_hat_t) - r(x_t)))^2
  (members weighted as in the expansion), the error of the first k steps' sum alone. The
  model's actions: ``--actions data`` the data's own (open loop: an action-only reward shows no
  error), ``replay`` (the default) pi at the model's state plus the behaviour's deviation from
  pi at the data's, a_hat_t = pi(s_hat_t) + a_t - pi(s_t): the data's actions where the model is
  exact, and the closed loop's error where it drifts;
- the operator's error e_op(r), a proxy of the tail's, two ways: ``ops``, the variance of G[r]
  across the run's operators (k = 0) at the query points, averaged over them; ``gap``, each
  operator's own: its mean squared gap to its longest expansion at the query points less the
  model's error there, max(mean (G_0 - G_K)^2 - e_model(r, K), 0) (two estimates, one error
  known: a two-cornered hat).

Rule: k*(r) = argmin_k e_model(r, k) + gamma^(2k) e_op(r). Prints, per kind of points and
operator, every probe's MSE over FQE's for the fixed horizons, the rule's choice (with either
e_op) and the best choice in hindsight. ``--e-model F.npy`` keeps e_model (read where it exists).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import jax
import numpy as np

from resolvent.algorithms import onestep as onestep_model
from resolvent.algorithms.onestep import member_weights
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import dataset_source, family_source
from resolvent.model import run_policy
from resolvent.rewards.probes import evaluate_reward


def segment_starts(data: dict, length: int, count: int, seed: int = 0) -> np.ndarray:
    """``count`` indices i whose next ``length`` transitions continue one another, none terminal."""
    cont = np.all(np.isclose(data["next_obs"][:-1], data["obs"][1:]), 1) & (np.asarray(data["terminated"][:-1]) < 0.5)
    ahead = np.zeros(len(cont) + 1, int)   # continuous steps from i
    for i in range(len(cont) - 1, -1, -1):
        ahead[i] = ahead[i + 1] + 1 if cont[i] else 1
    ok = np.flatnonzero(ahead[:-1] >= length)
    return np.random.default_rng(seed).choice(ok, min(count, len(ok)), replace=False)


def model_errors(model, data: dict, rewards, starts: np.ndarray, horizons: list[int], gamma: float,
                 policy=None) -> np.ndarray:
    """e_model (R, K): the members' rollout against the data, under the data's actions (policy
    None) or pi's at the model's state plus the behaviour's deviation from pi."""
    e, n, top = model.members, len(starts), max(horizons)
    s = np.tile(data["obs"][starts].astype(np.float32), (e, 1))                     # (E n, ds)
    scale = np.asarray(model.x_std[:s.shape[1]], np.float32)
    apart = np.zeros((e, n))
    diff = np.zeros((len(rewards), e * n))                                           # running sum per member
    out = np.zeros((len(rewards), len(horizons)))
    for t in range(top):
        idx = starts + t
        a = np.tile(data["action"][idx].astype(np.float32), (e, 1))                  # (E n, da)
        if policy is not None and t:   # the query's own first action, then pi's plus the behaviour's deviation
            a = np.clip(np.asarray(policy(s), np.float32) + a - np.tile(policy(data["obs"][idx]), (e, 1)),
                        data["action"].min(0), data["action"].max(0)).astype(np.float32)
        x = {k: np.asarray(v) for k, v in onestep_model.rollout_step(model, s, a).items()}
        real = {k: np.asarray(data[k][idx]) for k in x}
        for j, (_, r) in enumerate(rewards):
            got = np.asarray(jax.device_get(evaluate_reward(r, x, "model")), np.float64)          # (E n,)
            want = np.asarray(jax.device_get(evaluate_reward(r, real, "data")), np.float64)       # (n,)
            diff[j] += gamma ** t * (got - np.tile(want, e))
        s = np.clip(x["next_obs"], model.low, model.high).astype(np.float32)
        z = (s / scale).reshape(e, 1, n, -1)
        apart += np.sqrt(((z - z.transpose(1, 0, 2, 3)) ** 2).sum(-1)).sum(1)
        if t + 1 in horizons:
            w = member_weights(apart, model.keep)                                    # (E, n)
            err = (diff.reshape(len(rewards), e, n) * w).sum(1)                      # (R, n)
            out[:, horizons.index(t + 1)] = (err ** 2).mean(1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("oracle")
    ap.add_argument("onestep")
    ap.add_argument("answers")
    ap.add_argument("--starts", type=int, default=256)
    ap.add_argument("--actions", choices=("replay", "data"), default="replay")
    ap.add_argument("--e-model", default=None, help="an .npy that keeps e_model (read where it exists)")
    args = ap.parse_args()
    cfg = EvaluateConfig.from_dict(RunDir(args.run).read_config())
    src = family_source(cfg) if cfg.data is None else dataset_source(cfg)
    rewards, names = src.rewards["probe"], [n for n, _ in src.rewards["probe"]]
    with np.load(args.onestep) as z:
        model = onestep_model.from_arrays({k: z[k] for k in z.files})
    ans = np.load(args.answers)
    oracle = np.load(f"{args.oracle}/predictions.npz")
    fixed = [k for k in ans.files if not k.startswith("truth") and k.split("|")[1][1:].isdigit()]
    methods = sorted({k.split("|")[0] for k in fixed})
    horizons = sorted({int(k.split("|")[1][1:]) for k in fixed})
    gamma = 0.99
    data = {k: np.asarray(v) for k, v in src.data.items()}
    if args.e_model and Path(args.e_model).is_file():
        e_model = np.load(args.e_model)
    else:
        starts = segment_starts(data, max(horizons), args.starts)
        e_model = np.concatenate([np.zeros((len(rewards), 1)),
                                  model_errors(model, data, rewards, starts, [k for k in horizons if k], gamma,
                                               run_policy(args.run) if args.actions == "replay" else None)], 1)
        if args.e_model:
            np.save(args.e_model, e_model)
    print("e_model (R, K), k =", horizons)
    for name, row in zip(names, e_model):
        print(f"  {name:22s}", " ".join(f"{v:9.3g}" for v in row))
    for kind in ("dataset", "trajectory", "reset"):
        if f"truth|probe|{kind}" not in ans.files:
            continue
        truth = ans[f"truth|probe|{kind}"]                                          # (R, n)
        fqe = ((oracle[f"fqe|probe|{kind}|pred"] - truth) ** 2).mean(1)              # (R,)
        ops = np.stack([ans[f"{m}|k0|probe|{kind}"] for m in methods])               # (M, R, n)
        decay = (gamma ** (2 * np.asarray(horizons)))[None]                          # (1, K)
        pick_ops = (e_model + decay * ops.var(0).mean(1)[:, None]).argmin(1)          # (R,)
        print(f"\n{kind}: FQE's MSE:", " ".join(f"{v:.3g}" for v in fqe))
        print("  rule (ops), k per probe:", dict(zip(names, [horizons[i] for i in pick_ops])))
        for m in methods:
            gap = ((ans[f"{m}|k0|probe|{kind}"] - ans[f"{m}|k{max(horizons)}|probe|{kind}"]) ** 2).mean(1)
            e_gap = np.maximum(gap - e_model[:, -1], 0.0)                             # (R,)
            pick_gap = (e_model + decay * e_gap[:, None]).argmin(1)
            print(f"  {m:6s} rule (gap), k per probe:", [horizons[i] for i in pick_gap])
            ratio = np.stack([((ans[f"{m}|k{k}|probe|{kind}"] - truth) ** 2).mean(1) / fqe for k in horizons], 1)
            rows = {f"k{k}": ratio[:, i] for i, k in enumerate(horizons)}
            rows["rule-ops"] = ratio[np.arange(len(names)), pick_ops]
            rows["rule-gap"] = ratio[np.arange(len(names)), pick_gap]
            rows["hindsight"] = ratio.min(1)
            for label, v in rows.items():
                print(f"  {m:6s} {label:9s} " + " ".join(f"{x:6.2f}" for x in v)
                      + f"   within 1.5x {int((v <= 1.5).sum())}/{len(v)}  worst {v.max():.2f}")


if __name__ == "__main__":
    main()
