"""Reacher: a one-step model rolled out under the example's target policy from 32 resets, against
the environment's own trajectories (RMSE of joint velocities, fingertip-to-target and angles after
1, 5, 20, 50, 100 steps): a saved model, then models fitted with 3000 and 20000 Adam steps. From
the repository root:

    python results/accuracy/onestep/reacher_rollout.py RUN/models/favor.npz examples/reacher-jt-v0
"""
from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym
import jax
import numpy as np

from resolvent.algorithms import onestep
from resolvent.data.user import load_dataset

sys.path.insert(0, "examples")
from reacher import policy  # noqa: E402  (examples/ is not a package)

STEPS = 100


def true_rollouts(n: int) -> tuple[np.ndarray, np.ndarray]:
    """n resets (n, 10) and the environment's trajectories under pi from them (n, STEPS + 1, 10)."""
    env = gym.make("Reacher-v5").unwrapped
    starts, trajectories = [], []
    for k in range(n):
        o, _ = env.reset(seed=500 + k)
        starts.append(o)
        path = [o]
        for _ in range(STEPS):
            o, *_ = env.step(policy(o[None])[0])
            path.append(o)
        trajectories.append(path)
    return np.asarray(starts, np.float32), np.asarray(trajectories)


def report(name: str, model, starts: np.ndarray, truth: np.ndarray) -> None:
    s, path = starts, [starts]
    for _ in range(STEPS):
        s = np.clip(np.asarray(onestep.predict(model, s, policy(s))["next_obs"]), model.low, model.high)
        path.append(s)
    rolled = np.stack(path, 1)                                                     # (n, STEPS + 1, 10)
    for t in (1, 5, 20, 50, 100):
        e = np.sqrt(((rolled[:, t] - truth[:, t]) ** 2).mean(0))
        print(f"{name} t {t} rmse qdot {e[6:8].mean():.3f}  tip-target {e[8:10].mean():.3f}  "
              f"cos/sin {e[:4].mean():.3f}")
    speed = (rolled[:, 50:, 6:8] ** 2).sum(-1).mean()
    print(f"{name} mean speed^2 t>=50 model {speed:.3f} true {(truth[:, 50:, 6:8] ** 2).sum(-1).mean():.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a saved operator's .npz holding its one-step model")
    ap.add_argument("dataset", help="the Reacher Minari dataset (id or path)")
    args = ap.parse_args()
    starts, truth = true_rollouts(32)
    report("saved", onestep.from_arrays(np.load(args.model)), starts, truth)
    feats = {k: v for k, v in load_dataset(args.dataset)[1].items() if k in ("obs", "action", "next_obs")}
    x = np.concatenate([feats["obs"], feats["action"]], 1)
    for steps in (3000, 20000):
        t0 = time.time()
        model = onestep.fit(onestep.OneStepConfig(hidden=(256, 256), steps=steps), jax.random.PRNGKey(0), feats,
                            x.mean(0), x.std(0) + 1e-6)
        report(f"fit{steps}", model, starts, truth)
        print("time", time.time() - t0)


if __name__ == "__main__":
    main()
