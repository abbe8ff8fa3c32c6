"""auto's pick against the best candidate reward by reward, on every committed run with its
answers (predictions.npz) and the trust report:

    python results/accuracy/intervals/per_reward.py > results/accuracy/intervals/per-reward.md

The "default is the most accurate" row has scored a pick by each (reward set, kind of points)
cell's MSE averaged over the set's rewards, over the best candidate's; on MuJoCo that mean is the
large-scale rewards' alone (pitch-sq's MSE 6.5e4 beside height-rate's 0.01 at HalfCheetah-Vel
replay's dataset states). Here each reward counts once: the geometric mean over every reward of
every set and kind of its MSE over the best candidate's for that reward (the candidates: auto's,
every operator of ``AUTO_CANDIDATES`` and its expansions that the file holds). Beside it the
worst cell by the old measure. The pick is auto's rule (``trust.choose_method``, its default tie) over
the run's results.json.
"""
from __future__ import annotations

import glob
import json
import os

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES, EvaluateConfig
from resolvent.experiments.trust import choose_method
from resolvent.model import split_method

SETS = ("train", "test", "probe")


def scores(z, methods: list[str], also: dict | None = None) -> tuple[dict, dict]:
    """Per method: the per-reward geometric mean of MSE over the best's, and the worst cell's mean
    MSE over the best's. ``also``: more answers, name -> (reward set, kind) -> predictions (R, n),
    scored against the best of ``methods`` without counting among them."""
    also = also or {}
    cells = sorted({tuple(k.split("|")[1:3]) for k in z.files if k.split("|")[1] in SETS})
    logs, worst = {m: [] for m in (*methods, *also)}, {m: 0.0 for m in (*methods, *also)}
    for s, kind in cells:
        if not all(f"{m}|{s}|{kind}|pred" in z.files for m in methods):
            continue
        truth = z[f"{methods[0]}|{s}|{kind}|truth"]                                   # (R, n)
        mse = {m: np.maximum(((z[f"{m}|{s}|{kind}|pred"] - truth) ** 2).mean(1), 1e-300) for m in methods}
        best = np.min(np.stack(list(mse.values())), 0)                               # (R,)
        lowest = min(v.mean() for v in mse.values())
        mse |= {m: np.maximum(((pred(s, kind) - truth) ** 2).mean(1), 1e-300) for m, pred in also.items()}
        for m in mse:
            logs[m].append(np.log(mse[m] / best))
            worst[m] = max(worst[m], mse[m].mean() / lowest)
    return {m: float(np.exp(np.concatenate(v).mean())) for m, v in logs.items()}, worst


def over_runs(ratios: dict[str, list[float]]) -> str:
    """Each rule's ratios over the runs: their geometric mean and the worst."""
    return "; ".join(f"{k} {np.exp(np.mean(np.log(v))):.3f}x, {max(v):.3f}x" for k, v in ratios.items())


TIE = EvaluateConfig().auto_tie   # auto's tie: candidates within (1 + TIE) x the best on a signal are tied


def runs():
    """Every committed run with its answers and the trust report, auto's pick among its answers:
    (run, its methods' results, auto's pick, the open predictions, the candidates it holds)."""
    for path in sorted(glob.glob("results/**/predictions.npz", recursive=True)):
        run = os.path.dirname(path)
        if not os.path.exists(f"{run}/results.json"):
            continue
        with open(f"{run}/results.json") as f:
            methods = json.load(f).get("methods", {})
        candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        if not any("trust_rel_rmse_each" in methods[m] for m in candidates):
            continue
        pick = choose_method(methods, candidates, TIE)["chosen"]
        with np.load(path) as z:
            have = [m for m in candidates if any(k.startswith(f"{m}|") for k in z.files)]
            if pick in have:
                yield run, methods, pick, z, have


def main() -> None:
    print("| run | auto's pick | per reward: its MSE over the best's, geometric mean (the best) "
          "| the worst cell's mean MSE over the best's |\n|---|---|---|---|")
    for run, _, pick, z, have in runs():
        per, worst = scores(z, have)
        best = min(per, key=per.get)
        print(f"| {run} | {pick} | {per[pick] / per[best]:.3f}x ({best}) | {worst[pick]:.2f}x |")


if __name__ == "__main__":
    main()
