"""Time to an answer for one new reward: a trained operator (zero-shot) against plain FQE.

    python benchmarks/zero_shot.py [--run RUN_DIR] [--family pendulum-angle] [--dataset expert]
                                   [--steps 15000] [--fqe-steps 30000] [--pairs 10000]

With ``--run`` (a finished ``resolvent evaluate`` run with an attention model) its operator is
used; otherwise one is trained here with the default configuration (1 seed, ``--steps``).
For one new reward (a test member of the family, drawn from the test range):

- ``zero_shot``: wall time to answer it on ``--pairs`` state-action pairs of the dataset with
  the trained operator (encode the reward at the reference points + forward pass; warm, the
  median of 5), and the operator's MSE for it at the ground-truth initial points;
- ``fqe``: the per-reward FQE oracle (same data and hyper-parameters) trained on that reward
  alone, evaluated every 250 steps, until its MSE is at most the operator's: the training
  wall time and steps it needed (or the whole ``--fqe-steps`` if it never got there);
- ``ratio``: FQE seconds / zero-shot seconds.

One JSON line each.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time

import jax
import numpy as np

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir, prepare, run_evaluate
from resolvent.experiments.evaluate import make_method, named_key, score


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default=None, help="a finished evaluate run (attention model)")
    ap.add_argument("--family", default="pendulum-angle")
    ap.add_argument("--dataset", default="expert")
    ap.add_argument("--steps", type=int, default=15_000, help="operator steps when training here")
    ap.add_argument("--fqe-steps", type=int, default=30_000, help="most FQE steps")
    ap.add_argument("--pairs", type=int, default=10_000)
    args = ap.parse_args()

    if args.run:
        run_dir = args.run
        cfg = EvaluateConfig.from_dict(RunDir(run_dir).read_config())
    else:
        run_dir = tempfile.mkdtemp(prefix="zero-shot-")
        cfg = EvaluateConfig(family=args.family, dataset=args.dataset, methods=("attention",), seeds=1,
                             steps=args.steps, log_every=500, checkpoint_every=args.steps)
        run_evaluate(cfg, run_dir, plot=False)
    model = resolvent.load(run_dir, "attention")
    # one new reward: a single test member, drawn under its own name
    one = dataclasses.replace(cfg, seeds=1, n_test_rewards=1, log_every=250, methods=("fqe",))
    p = prepare(one)
    param = float(p.test_params[0])
    reward = model.family_reward(param)
    idx = np.random.default_rng(0).choice(len(p.x), min(args.pairs, len(p.x)), replace=False)
    obs, act = p.features["obs"][idx], p.features["action"][idx]

    times = []
    for _ in range(6):
        t0 = time.perf_counter()
        np.asarray(model.q_values(reward, obs, act))
        times.append(time.perf_counter() - t0)
    zs_seconds = statistics.median(times[1:])
    q0 = model.q_values(reward, *initial_points(p, model))
    zs_mse = float(np.mean((q0 - np.asarray(p.sets["test"].truth["reset"][0])) ** 2))
    print(json.dumps({"what": "zero_shot", "family": cfg.family, "dataset": cfg.dataset,
                      "reward": f"{p.family.param_name}={param:.3f}", "pairs": len(idx),
                      "seconds": round(zs_seconds, 5), "mse": round(zs_mse, 3)}), flush=True)

    fqe = make_method("fqe", one, p)
    state = fqe.init(named_key(one.seed, "fqe", "init", "0")[None], fqe.data)
    keys = named_key(one.seed, "fqe", "train", "0")[None]
    seconds, steps, mse = 0.0, 0, float("inf")
    while steps < args.fqe_steps:
        split = jax.vmap(jax.random.split)(keys)
        keys, chunk = split[:, 0], split[:, 1]
        t0 = time.perf_counter()
        state, loss = fqe.train(state, fqe.data, chunk)
        jax.block_until_ready(loss)
        seconds += time.perf_counter() - t0
        steps += one.log_every
        mse = float(score(fqe.predict(state.params), p)["test_mse"][0])
        if mse <= zs_mse:
            break
    print(json.dumps({"what": "fqe", "reached": mse <= zs_mse, "steps": steps,
                      "seconds": round(seconds, 3), "mse": round(mse, 3)}), flush=True)
    print(json.dumps({"ratio": round(seconds / zs_seconds, 1),
                      "meaning": "FQE training seconds to the operator's MSE per zero-shot second"}))


def initial_points(p, model):
    """The ground-truth initial points (s0, a0) in raw units."""
    x = np.asarray(p.points["reset"]) * p.x_std + p.x_mean
    ds = model.xi_features["obs"].shape[1]
    return x[:, :ds], x[:, ds:]


if __name__ == "__main__":
    main()
