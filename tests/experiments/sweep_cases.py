"""What the sweep tests of both engines (Ray, local) share: a tiny spec, a run's metric rows and
final entries without their timings, a sweep whose worker is killed mid-run, and the check that a
second sweep skips finished runs."""
import json
import os
import signal
import threading
import time

from resolvent.experiments import RunDir
from resolvent.experiments.spec import parse_spec, run_state

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


def kill_when(path, ready, sweep: threading.Thread) -> tuple[int, dict]:
    """SIGKILL the process that holds ``path``'s run lock once ``ready()``: its pid, and the
    methods its results.json held then."""
    deadline = time.monotonic() + 300
    while not ready():
        assert sweep.is_alive() and time.monotonic() < deadline, "the run never got there"
        time.sleep(0.005)
    pid = int((path / "run.lock").read_text().split()[0])
    written = RunDir(path).read_results().get("methods", {})
    os.kill(pid, signal.SIGKILL)
    return pid, written


def killed_mid_run(run_engine, root) -> dict:
    """An uninterrupted run of seed 0 (``run_engine(grid)``), then the 2-run sweep whose seed-0
    worker is killed (SIGKILL) right after its first checkpoint, both in ``root``."""
    reference = run_engine(parse_spec({**SPEC, "seeds": [0]}, out=root / "reference"))
    grid = parse_spec(SPEC, out=root / "killed")
    target, summaries = grid.runs[0].path, []
    sweeper = threading.Thread(target=lambda: summaries.append(run_engine(grid)))
    sweeper.start()
    pid, written = kill_when(target, lambda: (target / "checkpoints" / "linear.ckpt").exists(), sweeper)
    sweeper.join(timeout=300)
    return {"root": root, "grid": grid, "reference": reference, "summary": summaries[0], "pid": pid,
            "midway": "linear" not in written}
