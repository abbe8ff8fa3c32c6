"""What a new reward's answer at points already rolled out costs, against the reward's own cost at
the inputs it needs: favor+k400 and fb+k400 of a finished run (network seed 0), 1e4 of its
dataset's state-actions, the rollout made once. The answer evaluates the reward at the kept
members' distinct steps (F of them) and sums them by their weights; the floor is the same reward
at those F inputs in one call, as written and compiled (warm), and one 256-256 forward pass (a
Q-network's) at the 1e4 points.

    python results/accuracy/closure/reward_floor.py runs/main-job-16 2>/dev/null   # from the repository root
"""
from __future__ import annotations

import dataclasses
import sys

import jax
import jax.numpy as jnp
import numpy as np

import resolvent
from resolvent.experiments.problem import open_run

sys.path.insert(0, "benchmarks")
from zero_shot import warm_ms  # noqa: E402  (benchmarks/ is not a package)


def main() -> None:
    run = sys.argv[1]
    _, p = open_run(run)
    _, reward = p.source.rewards["test"][0]
    i = np.random.default_rng(0).choice(len(p.x), 10000, replace=False)
    obs, act = p.features["obs"][i], p.features["action"][i]
    for method in ("favor", "fb"):
        m = resolvent.load(run, f"{method}+k400")
        m = dataclasses.replace(m, params=jax.tree_util.tree_map(lambda a: a[:1], m.params))
        m.q_values(reward, obs, act, horizon=400)                                    # the rollout, once
        answer = warm_ms(lambda: m.q_values(lambda *a, **k: reward(*a, **k), obs, act, horizon=400), 7)
        ex = m.expansion(obs, act, 400)
        kept = np.flatnonzero(ex.weights.reshape(-1))
        places = ex.repeats.positions(kept, ex.alive.shape[1])                      # (F,)
        inputs = {key: jnp.asarray(v.reshape(-1, *v.shape[2:])[places]) for key, v in ex.steps.items()}
        written = warm_ms(lambda: reward(inputs), 7)
        compiled = jax.jit(reward)
        fused = warm_ms(lambda: compiled(inputs), 7)
        print(f"{method}+k400: a new reward at the rolled points {answer:.1f} ms; its F = {len(places):,} inputs "
              f"({len(places) / len(obs):.0f} a point); the reward alone on them {written:.1f} ms as written, "
              f"{fused:.1f} ms compiled (warm)", flush=True)
    key = jax.random.PRNGKey(0)
    w = [jax.random.normal(k, s) / np.sqrt(s[0]) for k, s in zip(jax.random.split(key, 3), [(4, 256), (256, 256),
                                                                                            (256, 1)])]
    x = jnp.asarray(np.c_[obs, act], jnp.float32)
    net = jax.jit(lambda x: jax.nn.relu(jax.nn.relu(x @ w[0]) @ w[1]) @ w[2])
    print(f"one 256-256 Q-network's forward pass at the {len(obs):,} points: {warm_ms(lambda: net(x), 7):.1f} ms")


if __name__ == "__main__":
    main()
