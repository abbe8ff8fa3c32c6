"""with_bank's third condition, measured on finished runs before it was built: the spread of auto's
pick G_K among its kept ensemble members at the trust report's points (the weighted standard
deviation of the members' own answers, RMS over the points) against D, the RMS difference between
the bank answer and the pick there, per held-out reward. Where D is well above the spread, the
bank departs from G_K by more than the one-step model's own uncertainty explains (Pendulum, where
the model is excellent and the bank's interpolation is the error); where the spread is the
larger, G_K is unsure and the bank may mend it (the noisy HalfCheetah).

    python results/accuracy/bank/spread/spread.py RUN OPERATOR PICK BANK_ANSWER [K]

K the pick's horizon (400). ``spread.txt``: five runs of ``../paired.txt`` (runs/pa-auto-bank,
par-bank-trust, pam-bank-trust, hcn-bank-trust, hc-bank-trust with K = 60; MountainCar's and
Ant-Dir's were stopped for time), and a later session's runs/pa-reach0-spread (Pendulum expert with
``--bank.reach 0``, ``../pendulum-expert-spread/``, the bank better there), each line a run's
median of spread / D over its held-out rewards. The members' answers here end with the operator
at s_K (gamma^K G); the product's ``trust_spread_each`` (``evaluate.trust_spread``, since built on
this) is the K-step sums' spread alone, and its ``trust_gap_each`` is taken against the bank
operator's own G_K (the pick, where the pick is G_400).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from resolvent.experiments import open_run


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x ** 2)))


def main() -> None:
    run, name, pick, banked = Path(sys.argv[1]), *sys.argv[2:5]
    k = int(sys.argv[5]) if len(sys.argv) > 5 else 400
    _, p = open_run(run)
    model = p.expansion_model(run / "models", name)
    obs, act = p.raw_points()
    rows = p.slices["trust"]
    ex = model.expansion(obs[rows], act[rows], k)
    w = ex.weights                                                                     # (E, n)
    with np.load(run / "predictions.npz") as z:
        a, b = z[f"{pick}|heldout|trust|pred"], z[f"{banked}|heldout|trust|pred"]         # (H, n) each
    out = []
    for j, (_, reward) in enumerate(p.source.rewards["heldout"]):
        h = ex.sums_at(reward, model.gamma, "trust", [k])[0]                              # (E n)
        tail = np.asarray(model._q(reward, ex.obs, ex.action)).mean(0)                     # (E n) the seeds' mean
        q = (h + model.gamma ** k * ex.alive[k] * tail).reshape(w.shape)                   # (E, n) each member's G_K
        sd = np.sqrt((((q - (q * w).sum(0)) ** 2) * w).sum(0))                            # (n,)
        out.append((rms(sd), rms(b[j] - a[j])))
    o = np.array(out)
    print(f"{run.name}: {pick} against {banked}: spread {o[:, 0].mean():.3g}, D {o[:, 1].mean():.3g} (means over "
          f"{len(o)} held-out rewards), median spread / D {np.median(o[:, 0] / o[:, 1]):.2f}")


if __name__ == "__main__":
    main()
