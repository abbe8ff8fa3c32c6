"""Reacher along pi's trajectories: where the action cost's error comes from, the model's arm or
the model's ``reward_ctrl``.

    python results/accuracy/reacher-kauto/at_rest.py RUN > results/accuracy/reacher-kauto/at-rest.txt

RUN is the finished run of this folder. The probe ``effort`` reads the info entry ``reward_ctrl``
(= -||a||^2 on the real data, exactly), which the one-step model *predicts* at every step of a
rollout. From the 64 trajectory points, along the real rollouts (the ground truth's) and along
the model's (fb's k = 400 expansion, kept members): ||a||^2, joint speed and distance to the
target per step; the discounted ||a||^2 by window of steps; the model's predicted ``reward_ctrl``
against -||a||^2 of the model's own actions; and every operator's G_400 for the same reward
written both ways, against the truth.
"""
from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np

from resolvent.experiments import open_run
from resolvent.model import load

K = 400
WINDOWS = ((0, 1), (1, 10), (10, 50), (50, 100), (100, 400))


def action_cost(f):
    """The same reward as ``reward_ctrl``, written from the action."""
    return -jnp.sum(f["action"] ** 2, axis=-1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    args = ap.parse_args()
    cfg, p = open_run(args.run)
    gt = p.source.points["trajectory"]
    effort = dict(p.source.rewards["probe"])["effort"]
    truth = gt.q(effort)                                                               # (n,)
    print(f"the truth of effort and of -||a||^2 differ by at most {np.abs(gt.q(action_cost) - truth).max():.2g}")
    ctrl = np.asarray(p.features["reward_ctrl"])                                      # the dataset's
    print("the data's reward_ctrl: largest {:.2g}, median {:.2g}, smallest {:.2g}".format(
        ctrl.max(), np.median(ctrl), ctrl.min()))

    model = load(args.run, f"fb+k{K}")
    model.onestep = p.pi.model
    ex = model.expansion(gt.obs0, gt.action0, K)
    w = ex.weights                                                                     # (E, n)
    e, n = w.shape
    real = {key: np.swapaxes(np.asarray(gt.features[key]), 0, 1) for key in ("obs", "action")}   # (T, n, ...)
    alive = np.asarray(gt.alive).T                                                     # (T, n)
    steps = {key: ex.steps[key].reshape(K, e, n, -1) for key in ("obs", "action")}     # (K, E, n, .)

    def mean(x):                                         # the members' kept mean, then over points
        return float((w * x).sum(0).mean())

    print("\n  t  ||a||^2 real / model   joint speed real / model   distance real / model")
    for t in (0, 1, 2, 5, 10, 20, 50, 100, 200, 399):
        ra, ma = (real["action"][t] ** 2).sum(-1).mean(), mean((steps["action"][t] ** 2).sum(-1))
        rv, mv = np.abs(real["obs"][t][:, 6:8]).sum(-1).mean(), mean(np.abs(steps["obs"][t][..., 6:8]).sum(-1))
        rd = np.linalg.norm(real["obs"][t][:, 8:10], axis=-1).mean()
        md = mean(np.linalg.norm(steps["obs"][t][..., 8:10], axis=-1))
        print(f"{t:3d}  {ra:8.4f} / {ma:7.4f}        {rv:7.3f} / {mv:6.3f}          {rd:7.4f} / {md:6.4f}")

    disc = 0.99 ** np.arange(K)[:, None]                                               # (K, 1)
    cost_real = disc * (real["action"][:K] ** 2).sum(-1) * alive[:K]                   # (K, n)
    cost_model = disc * ((w[None] * (steps["action"] ** 2).sum(-1)).sum(1))           # (K, n)
    pred = disc * (w[None] * ex.steps["reward_ctrl"].reshape(K, e, n)).sum(1)          # (K, n)
    print("\nwindow      discounted ||a||^2 real / model's actions   model's predicted -reward_ctrl")
    for lo, hi in WINDOWS:
        print(f"[{lo:3d},{hi:3d})   {cost_real[lo:hi].sum(0).mean():.4f} / {cost_model[lo:hi].sum(0).mean():.4f}"
              f"                     {-pred[lo:hi].sum(0).mean():.4f}")

    print(f"\nG_{K} against the truth (mean {truth.mean():.3f}, std {truth.std():.3f}):")
    for m in (m for m in cfg.methods if m != "fqe"):
        op = load(args.run, f"{m}+k{K}")
        op.onestep = p.pi.model
        for name, reward in (("reward_ctrl", effort), ("-||a||^2", action_cost)):
            q = op.q_values(reward, gt.obs0, gt.action0, seed=None).mean(0)
            r2 = 1 - ((q - truth) ** 2).mean() / truth.var()
            print(f"  {m:5s} written as {name:11s}: mean {q.mean():.3f}, R^2 {r2:.2f}")


if __name__ == "__main__":
    main()
