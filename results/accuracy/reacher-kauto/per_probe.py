"""Reacher along pi's trajectories: every probe's R^2, and where the action cost's error lies.

    python results/accuracy/reacher-kauto/per_probe.py RUN [--now]

RUN is the finished run of this folder (``config.json``; its ``predictions.npz`` holds every
answer). Prints each probe's R^2 at the reset and trajectory points for the per-reward FQE
oracle and every operator's k = 400 expansion, then, for the action cost (``effort``), the
expansion split into its two parts,

    G_400[r](s, a) = sum_{t<400} gamma^t c_t r(x_t)  (head: the one-step model's rollout under pi)
                   + gamma^400 c_400 G[r](s_400, pi(s_400))  (tail: the operator)

against the truth: which part carries the error. ``--now``: the R^2 only, of the operators'
expansions with today's one-step model (refitted from the run's config; since this session it
computes the scalars that are quadratics of the action): ``probes-now.txt``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from resolvent.algorithms.expansion import along_q
from resolvent.experiments import open_run
from resolvent.model import load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--now", action="store_true",
                    help="the operators' answers with today's one-step model (refitted from the run's config), "
                         "the R^2 only; without it, the answers of the run's predictions.npz")
    args = ap.parse_args()
    cfg, p = open_run(args.run)
    names = [name for name, _ in p.source.rewards["probe"]]
    for kind in ("reset", "trajectory"):
        for m in ("fqe", *(f"{m}+k400" for m in cfg.methods if m != "fqe")):
            if args.now and m == "fqe":
                continue
            pred, truth = answers(args, p, m, kind)                               # (R, n) each
            r2 = 1 - ((pred - truth) ** 2).mean(1) / truth.var(1)
            print(f"{kind:10s} {m:11s} R^2 " + "  ".join(f"{n} {v:.2f}" for n, v in zip(names, r2))
                  + f"   mean {r2.mean():.2f}, without effort {np.delete(r2, names.index('effort')).mean():.2f}")
    if args.now:
        return
    effort = dict(p.source.rewards["probe"])["effort"]
    for kind in ("reset", "trajectory"):
        gt = p.source.points[kind]
        truth = gt.q(effort)
        for m in (m for m in cfg.methods if m != "fqe"):
            model = load(args.run, f"{m}+k400")
            model.onestep = p.pi.model
            ex = model.expansion(gt.obs0, gt.action0, 400)
            nothing = lambda s, a: np.zeros((1, len(s)))   # noqa: E731 - the tail left out
            head = ex.member_mean(along_q(ex, effort, nothing, model.gamma, (0,))[..., 0, :])[0]       # (n,)
            full = model.q_values(effort, gt.obs0, gt.action0, seed=None).mean(0)
            rmse = {n: np.sqrt(((v - truth) ** 2).mean()) for n, v in (("head", head), ("full", full))}
            print(f"effort {kind:10s} {m:5s}: truth {truth.mean():.2f} (std {truth.std():.2f}); head {head.mean():.2f} "
                  f"(RMSE against the truth {rmse['head']:.2f}); tail {(full - head).mean():.2f}; "
                  f"G_400 RMSE {rmse['full']:.2f}")


def answers(args, p, method: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Every probe's answers and truth at ``kind`` points, (R, n) each, seeds averaged: the run's
    saved ones, or (``--now``) the operator's with today's one-step model."""
    if not args.now:
        with np.load(Path(args.run) / "predictions.npz") as z:
            pred, truth = z[f"{method}|probe|{kind}|pred"], z[f"{method}|probe|{kind}|truth"]
        return (pred.mean(0) if pred.ndim == 3 else pred), truth
    gt = p.source.points[kind]
    model = load(args.run, method)
    model.onestep = p.pi.model
    rewards = [r for _, r in p.source.rewards["probe"]]
    return (np.stack([model.q_values(r, gt.obs0, gt.action0, seed=None).mean(0) for r in rewards]),
            np.stack([gt.q(r) for r in rewards]))


if __name__ == "__main__":
    main()
