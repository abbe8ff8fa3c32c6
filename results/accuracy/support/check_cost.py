"""What the action-support check costs at 1e4 new points: HalfCheetah-Vel replay's check (a
20,000-transition sample, 17-D states, K = 100), three calls after a warm-up.

    python results/accuracy/support/check_cost.py runs/hc-replay-dyn > results/accuracy/support/check-cost.txt
"""
import sys
import time

import numpy as np

from resolvent.model import load_support

support = load_support(f"{sys.argv[1]}/models")
rng = np.random.default_rng(0)
obs = support.obs[rng.choice(len(support.obs), 10_000)] + 0.01          # (1e4, ds) near the data's states
act = support.actions[rng.choice(len(support.obs), 10_000)]             # (1e4, da)
support.check(obs[:512], act[:512])
times = []
for _ in range(3):
    start = time.perf_counter()
    support.check(obs, act)
    times.append(time.perf_counter() - start)
print(f"the check at 1e4 points: {', '.join(f'{v:.2f}' for v in times)} s (three calls, the machine otherwise idle)")
