"""How far an expansion's answer would move toward per-reward FQE if it were shrunk toward its
points' mean, Q_a = a Q + (1 - a) mean(Q), with the best a for each probe and kind of points read
from the truth (an upper bound on what any rule for a could give): on the committed 512-point
HalfCheetah-Vel replay run and its per-reward FQE oracle at the same points.

    python results/accuracy/shrinkage/oracle_shrink.py > results/accuracy/shrinkage/oracle-shrink.txt
"""
from __future__ import annotations

import json

import numpy as np

RUN, ORACLE, METHOD = ("results/accuracy/intervals/hc-replay-512", "results/accuracy/intervals/hc-replay-512-oracle",
                       "favor+kauto")
A = np.linspace(0.0, 1.0, 101)


def shrunk_mse(q: np.ndarray, t: np.ndarray, a: float) -> float:
    """The MSE against t of q shrunk toward its mean, a q + (1 - a) mean(q)."""
    return float(((a * q + (1 - a) * q.mean() - t) ** 2).mean())


def best_shrink(q: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """The a of ``A`` with the lowest ``shrunk_mse``, and that MSE."""
    mse = [shrunk_mse(q, t, a) for a in A]
    return float(A[int(np.argmin(mse))]), float(min(mse))


def main() -> None:
    z, o = np.load(f"{RUN}/predictions.npz"), np.load(f"{ORACLE}/predictions.npz")
    probes = json.load(open(f"{RUN}/results.json"))["probes"]
    print(f"{METHOD}'s MSE over per-reward FQE's, alone and shrunk by the truth's best a\n")
    print(f"{'points':10s} {'probe':18s} {'alone':>7s} {'best a':>7s} {'shrunk':>7s}")
    for kind in ("dataset", "trajectory", "reset"):
        t, q, f = (z[f"{METHOD}|probe|{kind}|truth"], z[f"{METHOD}|probe|{kind}|pred"], o[f"fqe|probe|{kind}|pred"])
        assert np.array_equal(t, o[f"fqe|probe|{kind}|truth"]), kind       # the same points, the same truth
        for i, name in enumerate(probes):
            fm = ((f[i] - t[i]) ** 2).mean()
            a, shrunk = best_shrink(q[i], t[i])
            print(f"{kind:10s} {name:18s} {((q[i] - t[i]) ** 2).mean() / fm:7.2f} {a:7.2f} {shrunk / fm:7.2f}")


if __name__ == "__main__":
    main()
