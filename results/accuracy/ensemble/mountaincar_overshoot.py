"""MountainCar: where the single one-step model's k = 400 answer for the own reward goes wrong (the
run's saved model, before scalars were clipped): predicted reward and termination along the
rollouts, and the episode length each answer implies (Q ~ 100 gamma^T).

    python results/accuracy/ensemble/mountaincar_overshoot.py RUN
"""
from __future__ import annotations

import argparse

import numpy as np

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import dataset_source


def implied_steps(q: np.ndarray) -> np.ndarray:
    """T with Q = 100 gamma^T, gamma = 0.99."""
    return np.log(np.clip(q, 1e-3, None) / 100) / np.log(0.99)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    args = ap.parse_args()
    cfg = EvaluateConfig.from_dict(RunDir(args.run).read_config())
    src = dataset_source(cfg)
    model = resolvent.load(args.run, "sf+k400")
    name, r = src.rewards["train"][0]
    for kind, gt in src.points.items():
        truth = gt.q(r)
        pred = model.q_values(r, gt.obs0, gt.action0, seed=0)
        e = model.expansion(gt.obs0, gt.action0, 400)
        print(kind, name, "truth mean", truth.mean().round(2), "pred mean", pred.mean().round(2),
              "mse", ((pred - truth) ** 2).mean().round(1))
        t_end = (e.alive < 0.5).argmax(0)                                       # first step with alive < 0.5
        print("  model episode ends at", np.percentile(t_end, [0, 25, 50, 75, 100]))
        d = implied_steps(pred) - implied_steps(truth)
        print("  implied T true", np.percentile(implied_steps(truth), [0, 25, 50, 75, 100]).round(1))
        print("  implied T diff (pred - true)", np.percentile(d, [0, 10, 25, 50, 75, 90, 100]).round(1))
        term = e.steps["terminated"]                                            # (k, n)
        i = np.argmax(np.abs(d))
        print("  worst point: truth", truth[i].round(1), "pred", pred[i].round(1), "term max",
              term[:, i].max().round(3), "alive end", e.alive[-1, i].round(3))
        if "reward" in e.steps:
            rew = e.steps["reward"]                                             # (k, n)
            j = rew[:, i].argmax()
            print("  reward max along", rew[:, i].max().round(1), "at", j, "alive there", e.alive[j, i].round(3))


if __name__ == "__main__":
    main()
