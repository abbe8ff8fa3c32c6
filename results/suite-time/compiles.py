"""Where a tiny test run's time goes: tests/test_model.py's ``policy_run`` fixture (favor and fb,
one-step model, distilled tail, bank, every default expansion) run alone, every XLA compilation
logged (``jax_log_compiles``) and tallied by program: seconds compiling, programs, name.

    python results/suite-time/compiles.py > results/suite-time/compiles.txt
"""
import logging
import re
import tempfile
import time
from collections import defaultdict

import jax

from resolvent.algorithms.bank import BankConfig
from resolvent.algorithms.distil import DistilConfig
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.experiments import EvaluateConfig, run_evaluate

TINY = dict(steps=20, log_every=10, checkpoint_every=10, seeds=2, m=16, n_initial=4,   # test_model.py's
            n_train_rewards=8, n_test_rewards=4, hidden=(16,), features=8, gt_tol=1e-3)
CONFIG = EvaluateConfig(methods=("favor", "fb"), n_refs=16, ref_pool=300, random_features=16,
                        onestep=OneStepConfig(hidden=(16,), steps=20),
                        distil=DistilConfig(horizon=30, points=64, rewards=4, steps=20, batch_size=16,
                                            n_refs=16, along=20, along_every=10, kernel_heads=8),
                        bank=BankConfig(points=64, horizon=30, steps=10), **TINY)
FINISHED = re.compile(r"Finished XLA compilation of (.*) in ([0-9.e-]+) sec")


class Tally(logging.Handler):
    """Seconds and count of every program's compilations, by name."""

    def __init__(self):
        super().__init__()
        self.seconds, self.count = defaultdict(float), defaultdict(int)

    def emit(self, record):
        hit = FINISHED.search(record.getMessage())
        if hit:
            self.seconds[hit.group(1)] += float(hit.group(2))
            self.count[hit.group(1)] += 1


def main() -> None:
    tally = Tally()
    logging.getLogger("jax").addHandler(tally)
    jax.config.update("jax_log_compiles", True)
    start = time.perf_counter()
    run_evaluate(CONFIG, tempfile.mkdtemp(), plot=False)
    wall = time.perf_counter() - start
    print(f"# the policy_run fixture alone: {wall:.1f} s, of it {sum(tally.seconds.values()):.1f} s in "
          f"{sum(tally.count.values())} XLA compilations")
    print("# seconds compiling, programs, name ('jit(add)' and the like: one JAX operation run as written, "
          "a program a shape)")
    for name in sorted(tally.seconds, key=tally.seconds.get, reverse=True):
        print(f"{tally.seconds[name]:7.2f} {tally.count[name]:4d} {name}")


if __name__ == "__main__":
    main()
