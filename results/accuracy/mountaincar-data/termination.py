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

``--head mse split split-hard`` also tries the fix proposed, which reads no rule: the scalars a transition
decides (terminated, the stored reward) from (s, a, s'), fitted on the dataset's own transitions
(256-256 MLPs, Adam 1e-3, 5000 steps of 512), then evaluated along every rollout at the model's
own next states, terminated_t, reward_t = g(s_t, a_t, s'_t). ``mse``: both regressed, as the
model's scalars are (the flag clipped to [0, 1]). ``split``: the flag by a logistic loss weighted
for the rare class, and the reward as (1 - p) r_go + p r_end, each part fitted on the transitions
that go on or that end. ``split-hard``: the same with the inputs clipped to the data's range
and the flag rounded to 0 or 1 (the rollout ends where it passes 1/2).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

import resolvent
from resolvent.algorithms.expansion import expanded_q
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.sources import config_source
from resolvent.operators.networks import MLP


def with_flags(ex, term: np.ndarray, reward: np.ndarray | None = None):
    """The same rollout, its termination ``term`` (k, E n) and, if given, its reward scalar."""
    alive = np.concatenate([np.ones_like(term[:1]), np.cumprod(1.0 - term, 0)])       # (k + 1, E n)
    steps = {**ex.steps, "terminated": term.astype(np.float32)}
    if reward is not None:
        steps["reward"] = reward.astype(np.float32)
    return dataclasses.replace(ex, steps=steps, alive=alive.astype(np.float32), last=[None])


def with_rule(ex):
    """The same rollout, its termination the environment's rule on the model's next states."""
    return with_flags(ex, (ex.steps["next_obs"][..., 0] >= 0.45).astype(np.float32))


def _fit(x: np.ndarray, y: np.ndarray, loss: str, steps: int, seed: int, weight: float = 1.0):
    """A 256-256 MLP on normalised x (N, dx) -> y (N, k): "mse", or "bce" (logits, positives
    weighted by ``weight``); returns the fitted map on raw inputs."""
    xm, xs = x.mean(0), x.std(0) + 1e-6
    ym, ys = (y.mean(0), y.std(0) + 1e-6) if loss == "mse" else (0.0, 1.0)
    net, opt = MLP((256, 256), y.shape[1]), optax.adam(1e-3)
    params = net.init(jax.random.PRNGKey(seed), x[:1])
    state = opt.init(params)

    def objective(p, xb, yb):
        out = net.apply(p, xb)
        if loss == "mse":
            return jnp.mean((out - yb) ** 2)
        return jnp.mean(-(weight * yb * jax.nn.log_sigmoid(out) + (1 - yb) * jax.nn.log_sigmoid(-out)))

    @jax.jit
    def step(params, state, xb, yb):
        g = jax.grad(objective)(params, xb, yb)
        upd, state = opt.update(g, state)
        return optax.apply_updates(params, upd), state

    rng = np.random.default_rng(seed)
    for _ in range(steps):
        i = rng.integers(0, len(x), 512)
        params, state = step(params, state, (x[i] - xm) / xs, (y[i] - ym) / ys)
    return lambda z: np.asarray(net.apply(params, (z - xm) / xs)) * ys + ym


def fit_head(data: dict, kind: str = "mse", steps: int = 5000, seed: int = 0):
    """g(s, a, s') -> (terminated, reward), fitted on the dataset's transitions (see the module).
    "mse": both regressed. "split": the flag by a logistic loss weighted for the rare class, the
    reward by its two parts, r = (1 - p) r_go + p r_end, r_go regressed on the transitions that go
    on and r_end on those that end."""
    x = np.concatenate([data["obs"], data["action"], data["next_obs"]], 1).astype(np.float32)      # (N, dx)
    term, reward = data["terminated"].astype(np.float32), data["reward"].astype(np.float32)        # (N,)
    if kind == "mse":
        g = _fit(x, np.stack([term, reward], 1), "mse", steps, seed)

        def head(obs, action, next_obs):
            out = g(np.concatenate([obs, action, next_obs], -1))
            return np.clip(out[..., 0], 0.0, 1.0), out[..., 1]
        return head
    end = term > 0.5
    flag = _fit(x, term[:, None], "bce", steps, seed, weight=float((~end).sum() / max(end.sum(), 1)))
    r_go = _fit(x[~end], reward[~end, None], "mse", steps, seed + 1)
    r_end = _fit(x[end], reward[end, None], "mse", steps // 5, seed + 2)

    low, high = x.min(0), x.max(0)

    def split(obs, action, next_obs):
        z = np.concatenate([obs, action, next_obs], -1)
        if kind == "split-hard":                                 # inputs within the data's range, a 0/1 flag
            z = np.clip(z, low, high)
        p = 1.0 / (1.0 + np.exp(-flag(z)[..., 0]))
        if kind == "split-hard":
            p = (p > 0.5).astype(np.float32)
        return p, (1 - p) * r_go(z)[..., 0] + p * r_end(z)[..., 0]
    return split


def with_head(ex, head):
    """The same rollout, its termination and reward from ``head`` at the model's own (s, a, s')."""
    return with_flags(ex, *head(ex.steps["obs"], ex.steps["action"], ex.steps["next_obs"]))


def r2(q: np.ndarray, truth: np.ndarray) -> float:
    return float(1.0 - np.mean((q - truth) ** 2) / np.var(truth))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--method", default="fb")
    ap.add_argument("--horizon", type=int, default=400)
    ap.add_argument("--head", nargs="*", choices=("mse", "split", "split-hard"), default=(),
                    help="also the scalars from (s, a, s'), fitted each of these ways (see the module)")
    args = ap.parse_args()
    src = config_source(EvaluateConfig.from_dict(RunDir(args.run).read_config()))
    model = resolvent.load(args.run, args.method)
    rewards = dict(src.rewards["train"] + src.rewards["probe"])
    heads = [fit_head(src.data, kind) for kind in args.head]
    print(f"{args.run}, {args.method}+k{args.horizon}: R^2 against the Monte-Carlo truth, the model's termination "
          f"/ the environment's rule on the model's next states"
          + "".join(f" / the scalars from (s, a, s'), {kind}" for kind in args.head) + "\n")
    print("| points | " + " | ".join(rewards) + " |\n|---|" + "---|" * len(rewards))
    for kind in ("reset", "trajectory", "dataset"):
        gt = src.points[kind]
        ex = model.expansion(gt.obs0, gt.action0, args.horizon)
        cells = []
        for reward in rewards.values():
            def tail(s, a, reward=reward):
                return model.q_values(reward, s, a, seed=None, horizon=0)
            truth = np.asarray(gt.q(reward))
            variants = (ex, with_rule(ex), *(with_head(ex, head) for head in heads))
            cells.append(" / ".join(f"{r2(expanded_q(e, reward, tail, model.gamma).mean(0), truth):.2f}"
                                    for e in variants))
        print(f"| {kind} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
