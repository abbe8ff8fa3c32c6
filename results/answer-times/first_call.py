"""A new reward's first answer at new points in a fresh process, against the warm ones after it:
what compiling costs the first time a user asks.

    python results/answer-times/first_call.py RUN [--answer favor+k400] [--points 10000] [--repeats 3]

The run's saved answer (``resolvent.load(RUN, ANSWER)``), the run's first test reward, ``--points``
of its dataset's state-actions (the benchmark's, ``benchmarks/zero_shot.py``): the first call's
seconds, then ``--repeats`` calls each at points moved by 1e-5 (new points: a rollout each), and
the XLA compilations the first call made (JAX's own log) with their seconds, by what compiled.
One line of JSON.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import time
from collections import Counter

import jax
from rolled_compiled import reward_and_points   # this folder's: the run's test reward and points

import resolvent

FINISHED = re.compile(r"Finished XLA compilation of (\S+) in ([0-9.e+-]+) sec")


class Compilations(logging.Handler):
    """JAX's compilation log, kept: [(what, seconds)]."""

    def __init__(self):
        super().__init__()
        self.seen: list[tuple[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        hit = FINISHED.search(record.getMessage())
        if hit:
            self.seen.append((hit.group(1), float(hit.group(2))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--answer", default="favor+k400")
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    (name, reward), obs, act = reward_and_points(args.run, args.points)
    model = resolvent.load(args.run, args.answer)
    log = Compilations()
    jax.config.update("jax_log_compiles", True)
    logging.getLogger("jax").addHandler(log)
    t0 = time.perf_counter()
    model.q_values(reward, obs, act, seed=0)
    first = time.perf_counter() - t0
    jax.config.update("jax_log_compiles", False)
    warm = []
    for i in range(1, args.repeats + 1):
        t0 = time.perf_counter()
        model.q_values(reward, obs + 1e-5 * i, act, seed=0)
        warm.append(round(time.perf_counter() - t0, 2))
    by = Counter()
    for what, seconds in log.seen:
        by[what] += seconds
    print(json.dumps({"answer": args.answer, "reward": name, "points": len(obs), "first_s": round(first, 2),
                      "warm_s": warm, "compilations": len(log.seen),
                      "compile_s": round(sum(s for _, s in log.seen), 2),
                      "compile_s_by": {k: round(v, 2) for k, v in by.most_common(6)}}))


if __name__ == "__main__":
    main()
