"""Does the rollout under pi leave the data, where the expansion goes wrong? Per query point of a
finished run: how far the one-step model's rollout under pi strays from the dataset (the mean,
over its steps t < k and kept members, of the distance from the normalised (s_t, pi(s_t)) to its
nearest dataset (s, a)), beside how much G_k's squared error at that point exceeds the operator's
(mean over the test rewards and the operators, against the truth), and the Spearman correlation
of the two over each kind's points.

    python results/accuracy/horizon/drift/support.py RUN [--every 10] > OUT.md

The members' spread (kauto's e_model) stays small where all of them extrapolate alike; the
distance to the data does not need them to disagree (the uncertainty of MOPO and MOReL).
"""
import argparse
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import resolvent
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.problem import prepare
from resolvent.experiments.rundir import RunDir


@jax.jit
def nearest(q: jax.Array, x: jax.Array) -> jax.Array:
    """Each row of q (b, d): its distance to the nearest row of x (n, d)."""
    d2 = (q ** 2).sum(1)[:, None] - 2 * q @ x.T + (x ** 2).sum(1)[None]      # (b, n)
    return jnp.sqrt(jnp.maximum(d2.min(1), 0.0))


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--every", type=int, default=10, help="every how many rollout steps the distance is taken")
    args = ap.parse_args()
    run = Path(args.run)
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    p = prepare(cfg, None)
    pred = np.load(run / "predictions.npz")
    all_obs, all_act = p.raw_points()                                      # every evaluation point
    data = jnp.asarray(p.x)                                                # (n, dx) normalised (s, a)
    first = resolvent.load(run, f"{cfg.methods[0]}+kauto")
    print("| kind | k | mean distance along the rollout (data's own: 0) | G_k's squared error over G's, "
          "mean over points | Spearman(distance, excess error) over points |")
    print("|---|---|---|---|---|")
    for kind, rows in p.slices.items():
        if kind not in ("reset", "trajectory", "dataset"):
            continue
        obs, act = all_obs[rows], all_act[rows]
        ex = first.expansion(obs, act, max(cfg.horizons))
        w = ex.weights                                                     # (E, n)
        x = np.concatenate([ex.steps["obs"], ex.steps["action"]], -1)      # (K, E n, dx) raw
        x = (x - p.x_mean) / p.x_std
        ts = np.arange(0, ex.horizon, args.every)
        dist = np.stack([np.asarray(nearest(jnp.asarray(x[t], jnp.float32), data)) for t in ts])   # (T, E n)
        dist = (dist.reshape(len(ts), *w.shape) * w).sum(1)                # (T, n) the kept members' mean
        truth = {op: pred[f"{op}|test|{kind}|truth"] for op in cfg.methods}                        # (R, n)
        err0 = np.mean([(pred[f"{op}|test|{kind}|pred"] - truth[op]) ** 2 for op in cfg.methods], 0).mean(0)
        for k in cfg.horizons:
            errk = np.mean([(pred[f"{op}+k{k}|test|{kind}|pred"] - truth[op]) ** 2 for op in cfg.methods], 0).mean(0)
            dk = dist[ts < k].mean(0)                                      # (n,)
            excess = errk - err0
            print(f"| {kind} | {k} | {dk.mean():.3f} | {np.mean(errk) / np.mean(err0):.2f}x | "
                  f"{spearman(dk, excess):+.2f} |", flush=True)


if __name__ == "__main__":
    main()
