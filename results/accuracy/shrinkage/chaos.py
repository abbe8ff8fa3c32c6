"""How much of an expansion's error at HalfCheetah-Vel replay's points is the closed loop's chaos:
each point's answer beside the mean of the answers at P copies of it, each observation moved by eps
relative (a normal draw), and the copies' variance over the answer's MSE; every MSE over per-reward
FQE's at the same points (the runs of ``spread_shrink.py``):

    python results/accuracy/shrinkage/chaos.py runs/hc-replay-js runs/hc-replay-js-oracle 8 1e-5 \\
        > results/accuracy/shrinkage/chaos.txt
"""
from __future__ import annotations

import sys

import numpy as np

import resolvent
from resolvent.experiments.problem import open_run


def main(run: str, oracle: str, copies: str = "8", eps: str = "1e-5", method: str = "favor+k400") -> None:
    P, eps_ = int(copies), float(eps)
    _, p = open_run(run)
    o = np.load(f"{oracle}/predictions.npz")
    model = resolvent.load(run, method)
    rng = np.random.default_rng(0)
    print(f"{method}: MSE over per-reward FQE's at each point alone and as the mean of {P} copies moved by "
          f"{eps_:g} (relative); the copies' variance over the answer's MSE\n")
    print(f"{'points':10s} {'probe':18s} {'alone':>6s} {'mean':>6s} {'var/MSE':>8s}")
    for kind, gt in p.source.points.items():
        obs, act = np.asarray(gt.obs0), np.asarray(gt.action0)
        n = len(obs)
        moved = [obs * (1 + eps_ * rng.standard_normal(obs.shape)).astype(np.float32) for _ in range(P)]
        all_obs, all_act = np.concatenate([obs, *moved]), np.concatenate([act] * (P + 1))
        for i, (name, r) in enumerate(p.source.rewards["probe"]):
            q = np.asarray(model.q_values(r, all_obs, all_act, seed=None)).mean(0).reshape(P + 1, n)
            t, f = o[f"fqe|probe|{kind}|truth"][i], o[f"fqe|probe|{kind}|pred"][i]
            fm, mse = ((f - t) ** 2).mean(), ((q[0] - t) ** 2).mean()
            print(f"{kind:10s} {name:18s} {mse / fm:6.2f} {((q[1:].mean(0) - t) ** 2).mean() / fm:6.2f} "
                  f"{q[1:].var(0).mean() / mse:8.3f}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
