"""Is the one-step members' disagreement a per-point error bar? Measured on a run with ground truth.

    python results/accuracy/member-spread/spread.py runs/main-job-30 favor+k400 \
        > results/accuracy/member-spread/pendulum-expert.txt

For each test and probe reward and each kind of ground-truth points: the answer's RMSE against the
Monte-Carlo truth, the mean over points of the kept members' spread (the square root of their
weighted variance of the expansion's discounted reward sum, ``horizon.point_spread``, the quantity
kauto weighs), how often |error| <= 2 x spread at a point (a calibrated Gaussian bar: 95%), and
the rank correlation of the spread with |error| across the points (Spearman). The network seeds'
spread is printed beside it.
"""
from __future__ import annotations

import sys

import numpy as np
from scipy.stats import spearmanr

import resolvent
from resolvent.algorithms.horizon import point_spread
from resolvent.experiments import EvaluateConfig, RunDir, prepare
from resolvent.model import split_method


def main() -> None:
    run, method = sys.argv[1], sys.argv[2]
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    p = prepare(cfg)
    model = resolvent.load(run, method)
    k = split_method(method)[1]
    print(f"run {run}, {method}; per reward and kind of points: RMSE, mean member spread, mean seed spread, "
          f"share of points with |err| <= 2 spread, Spearman(spread, |err|)")
    print(f"{'points':>10} {'reward':>16} {'RMSE':>9} {'spread':>9} {'seeds':>9} {'covered':>8} {'spearman':>9}")
    for kind, gt in p.source.points.items():
        ex = model.expansion(gt.obs0, gt.action0, k)
        covered, rhos = [], []
        for rewards in ("test", "probe"):
            for j, (name, reward) in enumerate(p.source.rewards[rewards]):
                q = model.q_values(reward, gt.obs0, gt.action0, seed=None)                  # (S, n)
                err = np.abs(q.mean(0) - np.asarray(p.sets[rewards].truth[kind][j]))        # (n,)
                spread = np.sqrt(point_spread(ex, reward, [k], model.gamma)[0])             # (n,)
                rho = spearmanr(spread, err)[0]
                covered.append(np.mean(err <= 2 * spread))
                rhos.append(rho)
                print(f"{kind:>10} {name[:16]:>16} {np.sqrt(np.mean(err ** 2)):>9.3g} {spread.mean():>9.3g} "
                      f"{q.std(0).mean():>9.2g} {covered[-1]:>8.2f} {rho:>9.2f}")
        print(f"{kind:>10} {'(all rewards)':>16} {'':>9} {'':>9} {'':>9} {np.mean(covered):>8.2f} "
              f"{np.nanmedian(rhos):>9.2f}  (mean covered, median Spearman)")


if __name__ == "__main__":
    main()
