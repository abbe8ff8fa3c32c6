"""Time to an answer for one new reward (1e4 state-actions, one seed, warm, median of 5) for each
model of an evaluate run: encode, forward, whole answer.

    python results/answer-times/measure.py RUN_DIR > results/answer-times/pendulum-angle-expert.jsonl
"""
import dataclasses
import json
import statistics
import sys
import time

import jax
import numpy as np

import resolvent
from resolvent.families import get_family


def warm_ms(f) -> float:
    times = []
    for _ in range(6):
        t0 = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times[1:])


def main(run: str) -> None:
    rng = np.random.default_rng(0)
    n = 10_000
    th = rng.uniform(-np.pi, np.pi, n)
    obs = np.stack([np.cos(th), np.sin(th), rng.uniform(-8, 8, n)], 1).astype(np.float32)
    act = rng.uniform(-2, 2, (n, 1)).astype(np.float32)
    reward = get_family("pendulum-angle").reward_callable(0.9)
    for method in ["favor", "fb", "attention", "sf"]:
        m = resolvent.load(run, method)
        m = dataclasses.replace(m, params=jax.tree_util.tree_map(lambda a: a[:1], m.params))
        enc = m.encode([reward])
        print(json.dumps({"method": method, "ref_points": int(m.xi_features["obs"].shape[0]),
                          "encode_ms": round(warm_ms(lambda: m.encode([reward])), 2),
                          "forward_ms": round(warm_ms(lambda: m.q_from_encodings(enc, obs, act)), 2),
                          "answer_ms": round(warm_ms(lambda: m.q_values(reward, obs, act)), 2)}))


if __name__ == "__main__":
    main(sys.argv[1])
