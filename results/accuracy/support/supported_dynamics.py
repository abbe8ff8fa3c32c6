"""A lead for the unsupported states, measured offline: the one-step model stepped at an action the
data took near the state where pi's is unsupported, the reward still scored at pi's action.

    python results/accuracy/support/supported_dynamics.py RUN ORACLE > results/accuracy/support/supported-dynamics.md
    python results/accuracy/support/supported_dynamics.py RUN > ...    # no oracle: each probe's R^2 against the truth

At HalfCheetah-Vel replay's six upside-down dataset states the one-step model rights the cheetah
under pi, the simulator does not (``horizon/per-point``): pi's action there is far from every
action the data took near those states (``measure.md``), so the model answers off its data. A
per-reward FQE bootstraps from the data's own next states; the analogue for the rollout moves a
step's action, where the action-support check marks it (d_K > T), into the support before the
model steps:

    nearest:  a' = the data action nearest to pi(s) among those taken at the K nearest data states
              (the product's option, ``--support.dynamics``: ``ActionSupport.supported``)
    to T:     a' = a_n + (pi(s) - a_n) T / d_K          (a_n that action: moved just inside the support)

each also at the unsupported starts alone (the points whose own pi(s) is unsupported answered by
the variant, the others by the exact rollout: a choice per point that depends on the points only),

and every reward still reads pi's own action (``steps["action"]``), so the expansion stays linear,
monotone and constant-exact: only the states the model visits change. Scored at RUN's points
against its truth and the per-reward FQE oracle at the same points: each probe's MSE over FQE's,
favor+k400. RUN: ``resolvent evaluate halfcheetah-vel --dataset replay --methods favor --seeds 1``;
ORACLE: ``resolvent evaluate halfcheetah-vel --dataset replay --methods fqe --oracle-rewards probe
--seeds 1``.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

import resolvent
from resolvent.evaluation.support import ActionSupport
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.sources import config_source
from resolvent.model import load_support

KINDS = ("dataset", "reset", "trajectory")
MODES = ("exact", "the product (nearest, at unsupported starts)", "nearest, everywhere", "to T, everywhere",
         "to T, at unsupported starts")
METHOD = "favor+k400"


def to_t(support: ActionSupport, obs: np.ndarray, act: np.ndarray) -> np.ndarray:
    """The "to T" variant: an unsupported action moved toward the data's nearest one until it is T
    from it, a_n + (pi(s) - a_n) T / d_K (``ActionSupport.supported`` replaces it by a_n)."""
    obs, act = np.asarray(obs, np.float32), np.asarray(act, np.float32)
    d, a_n = support._nearest(obs, act)
    scale = np.minimum(1.0, support.threshold / np.maximum(d, 1e-12))[:, None]
    return (a_n + (act - a_n) * scale).astype(np.float32)


def answers(run: Path, support: ActionSupport, mode: str, rewards: dict, pts,
            start: np.ndarray) -> tuple[np.ndarray, float]:
    """favor+k400's answers (P, n) with the model stepped as ``mode`` says, and the share of the
    rollout's visited steps where pi's action is unsupported (those the variants move)."""
    model = resolvent.load(run, METHOD)                                   # a fresh rollout cache
    if mode == "the product (nearest, at unsupported starts)":
        model.support = replace(support, dynamics=True)                   # --support.dynamics
    elif mode != "exact":                                                 # a variant, in place of the product's
        fn = support.supported if mode.startswith("nearest") else partial(to_t, support)
        steer = start if mode.endswith("starts") else None
        model.dynamics = lambda obs: (fn, steer)
    pred = np.stack([np.asarray(model.q_values(r, pts.obs0, pts.action0, seed=None)).mean(0)
                     for r in rewards.values()])                          # (P, n)
    ex = model.expansion(pts.obs0, pts.action0, 400)
    obs = ex.steps["obs"].reshape(-1, ex.steps["obs"].shape[-1])[::7]     # every 7th visited step: (k, E n) rows
    acts = ex.steps["action"].reshape(-1, ex.steps["action"].shape[-1])[::7]
    return pred, float(support.check(obs, acts).unsupported.mean())


def main() -> None:
    run = Path(sys.argv[1])
    oracle_run = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    src = config_source(cfg)
    support = load_support(run / "models")
    probes = dict(src.rewards["probe"])
    own = np.load(run / "predictions.npz")
    oracle = None if oracle_run is None else np.load(oracle_run / "predictions.npz")
    what = "R^2 against the truth" if oracle is None else f"MSE over per-reward FQE's ({oracle_run})"
    print(f"{METHOD} at {run}'s points; each probe's {what}; T = {support.threshold:.3g}\n")
    count = "probes with R^2 >= 0.85" if oracle is None else "probes within 1.5x"
    print(f"| points | mode | unsupported starts | steps marked | {count} | " + " | ".join(probes) + " |")
    print("|---|---|---|---|---|" + "---|" * len(probes))
    for kind in KINDS:
        pts = src.points[kind]
        truth = own[f"{METHOD}|probe|{kind}|truth"]                                       # (P, n)
        if oracle is not None:
            assert np.allclose(oracle[f"fqe|probe|{kind}|truth"], truth), "the oracle's points are not the run's"
        base = (truth.var(1) if oracle is None
                else ((oracle[f"fqe|probe|{kind}|pred"] - truth) ** 2).mean(1))          # (P,)
        start = support.check(pts.obs0, resolvent.load(run, METHOD).target_policy(pts.obs0)).unsupported   # (n,)
        for mode in MODES:
            pred, moved = answers(run, support, mode, probes, pts, start)
            if mode == "exact":       # the run's own answers, as far as the points' float32 copy lets them be
                gap = np.abs(pred - own[f"{METHOD}|probe|{kind}|pred"].reshape(pred.shape)).max(1) / truth.std(1)
                print(f"| {kind} | (the run's own answers: the largest difference over the truth's std "
                      f"{gap.max():.3g}) | | | | " + " |" * len(probes), flush=True)
            ratio = ((pred - truth) ** 2).mean(1) / base                                 # (P,) over FQE's, or 1 - R^2
            good = (1 - ratio >= 0.85) if oracle is None else (ratio <= 1.5)
            cells = [f"{1 - v:.3f}" if oracle is None else f"{v:.2f}x" for v in ratio]
            print(f"| {kind} | {mode} | {start.sum()}/{len(start)} | {moved:.4f} | {good.sum()}/{len(ratio)} | "
                  + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
