"""Where MountainCar's goal probe goes wrong: the one-step model's soft termination at the goal.

    python results/accuracy/mountaincar-data/termination.py RUN [--method fb] [--horizon 400]

The expansion weighs step t by c_t, c_{t+1} = c_t (1 - terminated_t), terminated_t the model's
prediction (``algorithms/expansion.py``). In MountainCarContinuous an episode terminates exactly
when the next position reaches 0.45 (at a velocity >= 0, which reaching it implies), but the
model, a regression of the 0/1 flag on (s, a), predicts 0.01-0.9 at the step that crosses, so
the rollout goes on past the goal with weight 1 - terminated and the goal indicator
1[next position >= 0.45] is paid again. This rescoring keeps every rollout as it is and replaces
the flag by the environment's rule on the model's own next states,

    terminated_t = 1[next_obs_t[0] >= 0.45]

then answers G_k[r] for each probe at the run's three kinds of points. It measures how much of
the probes' error the soft flag explains; it is not a method (it reads MountainCar's rule).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

import resolvent
from resolvent.algorithms.expansion import expanded_q
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.sources import config_source


def with_rule(ex):
    """The same rollout, its termination the environment's rule on the model's next states."""
    term = (ex.steps["next_obs"][..., 0] >= 0.45).astype(np.float32)                  # (k, E n)
    alive = np.concatenate([np.ones_like(term[:1]), np.cumprod(1.0 - term, 0)])       # (k + 1, E n)
    return dataclasses.replace(ex, steps={**ex.steps, "terminated": term}, alive=alive, last=[None])


def r2(q: np.ndarray, truth: np.ndarray) -> float:
    return float(1.0 - np.mean((q - truth) ** 2) / np.var(truth))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--method", default="fb")
    ap.add_argument("--horizon", type=int, default=400)
    args = ap.parse_args()
    src = config_source(EvaluateConfig.from_dict(RunDir(args.run).read_config()))
    model = resolvent.load(args.run, args.method)
    rewards = dict(src.rewards["train"] + src.rewards["probe"])
    print(f"{args.run}, {args.method}+k{args.horizon}: R^2 against the Monte-Carlo truth, the model's termination "
          f"/ the environment's rule on the model's next states\n")
    print("| points | " + " | ".join(rewards) + " |\n|---|" + "---|" * len(rewards))
    for kind in ("reset", "trajectory", "dataset"):
        gt = src.points[kind]
        ex = model.expansion(gt.obs0, gt.action0, args.horizon)
        cells = []
        for reward in rewards.values():
            def tail(s, a, reward=reward):
                return model.q_values(reward, s, a, seed=None, horizon=0)
            truth = np.asarray(gt.q(reward))
            soft, rule = (expanded_q(e, reward, tail, model.gamma).mean(0) for e in (ex, with_rule(ex)))
            cells.append(f"{r2(soft, truth):.2f} / {r2(rule, truth):.2f}")
        print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
