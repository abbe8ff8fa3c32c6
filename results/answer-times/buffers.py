"""A new reward's whole answer at 1e4 new points with the rollout's arrays on the memory of the
rollout dropped before it (``expansion.Buffers``, the package's: ``Rollouts.buffers``) and made
fresh (``Rollouts.buffers`` = None), alternated in one process, each call at its own draw of the
data's state-actions: wall seconds and minor page faults per call.

    python results/answer-times/buffers.py runs/main-job-27 [CALLS]

fb's G_400 (``fb+k400``) and the bank's answer (``fb+b400+k400``, P = 2048, the run's own bank
configuration); the first call of each kind is left out (compilations).
"""
from __future__ import annotations

import dataclasses
import resource
import sys
import time

import numpy as np

import resolvent
import resolvent.algorithms.expansion as expansion
from resolvent.algorithms.bank import Bank, bank_starts
from resolvent.experiments import open_run
from resolvent.keys import name_id
from resolvent.transitions import Member


def main() -> None:
    run, calls = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    cfg, p = open_run(run)
    name, reward = p.source.rewards["test"][0]
    expansion.PROGRESS_ROWS = 1 << 62                                   # no progress bar
    for label in ("fb+k400", "fb+b400+k400"):
        model = resolvent.load(run, "fb+k400")
        if "+b" in label:
            bank = dataclasses.replace(cfg.bank, points=2048)
            model.bank = Bank(bank, bank_starts(p.features, bank, name_id(f"{cfg.seed}-bank"))).build(
                model.onestep, model.target_policy)
        pool, rows = model.rollouts.buffers, {"on buffers": [], "fresh": []}
        for i in range(2 * calls + 2):
            kind = list(rows)[i % 2]
            model.rollouts.buffers = pool if i % 2 == 0 else None
            idx = np.random.default_rng(i).choice(len(p.features["obs"]), 10_000, replace=False)
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0 = time.perf_counter()
            model.q_values(Member(reward.fn, reward.param), p.features["obs"][idx], p.features["action"][idx],
                           horizon=400)
            wall = time.perf_counter() - t0
            if i >= 2:
                rows[kind].append((wall, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults))
        for kind, got in rows.items():
            print(f"{label:>14} {kind:>10}: wall s/minor faults  "
                  + "  ".join(f"{w:.2f}/{f}" for w, f in got)
                  + f"   median wall {np.median([w for w, _ in got]):.2f}", flush=True)


if __name__ == "__main__":
    main()
