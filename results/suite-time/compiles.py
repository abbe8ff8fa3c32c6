"""Where a tiny test run's time goes: tests/test_model.py's ``policy_run`` fixture (favor and fb,
one-step model, distilled tail, bank, every default expansion) run alone, every XLA compilation
logged (``jax_log_compiles``) and tallied by program: seconds compiling, programs, name.

    python results/suite-time/compiles.py > results/suite-time/compiles.txt
"""
import logging
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import jax

from resolvent.experiments import run_evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.test_model import POLICY_RUN  # noqa: E402 - the fixture's own configuration

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
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_evaluate(POLICY_RUN, out, plot=False)
        wall = time.perf_counter() - start
    print(f"# the policy_run fixture alone: {wall:.1f} s, of it {sum(tally.seconds.values()):.1f} s in "
          f"{sum(tally.count.values())} XLA compilations")
    print("# seconds compiling, programs, name ('jit(add)' and the like: one JAX operation run as written, "
          "a program a shape)")
    for name in sorted(tally.seconds, key=tally.seconds.get, reverse=True):
        print(f"{tally.seconds[name]:7.2f} {tally.count[name]:4d} {name}")


if __name__ == "__main__":
    main()
