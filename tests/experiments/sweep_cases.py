"""What the sweep tests of both engines (Ray, local) share: a tiny spec, a run's metric rows and
final entries without their timings, and the check that a second sweep skips finished runs."""
import json

from resolvent.experiments import RunDir
from resolvent.experiments.spec import run_state

TINY = {"family": "pendulum-angle", "methods": ["linear"], "preset": "paper", "steps": 1000, "log_every": 50,
        "checkpoint_every": 100, "m": 16, "n_initial": 4, "hidden": [16], "features": 8, "gt_tol": 1e-3,
        "n_train_rewards": 8, "n_test_rewards": 4}
SPEC = {"task": "evaluate", "seeds": 2, "fixed": TINY}


def rows(path):
    return [{k: v for k, v in r.items() if k != "seconds"} for r in RunDir(path).read_metrics()]


def final(path):
    res = json.loads((path / "results.json").read_text())
    return {m: {k: v for k, v in e.items() if k != "seconds"} for m, e in res["methods"].items()}


def assert_a_second_sweep_skips(grid, run_engine) -> None:
    """``run_engine(grid)`` on a grid whose runs are all finished runs nothing and writes nothing."""
    before = {r.path: (r.path / "results.json").stat().st_mtime_ns for r in grid.runs}
    assert [run_state(r) for r in grid.runs] == ["done"] * len(grid.runs)
    summary = run_engine(grid)
    assert summary.skipped == [str(r.path) for r in grid.runs] and not summary.ran + summary.resumed
    assert {r.path: (r.path / "results.json").stat().st_mtime_ns for r in grid.runs} == before
