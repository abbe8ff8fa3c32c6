"""`resolvent sweep --engine local`: the same grid without Ray, each run a process of this
machine. A process killed mid-run is started again and resumes to the uninterrupted run's
numbers; a run that raises fails once with its error; a process that keeps dying fails the run
after its retries; GPUs are handed out the least busy first; the CLI runs it where Ray is not
installed."""
import json
import os
import subprocess
import sys
import threading

import pytest

from resolvent.experiments import RunDir
from resolvent.experiments.local import gpu_ids, least_busy, run_local
from resolvent.experiments.spec import parse_spec, run_state

from sweep_cases import SPEC, TINY, assert_a_second_sweep_skips, final, kill_when, killed_mid_run, rows

@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """An uninterrupted run of seed 0, then the 2-run sweep whose seed-0 process is killed right
    after its first checkpoint, both with the local engine."""
    return killed_mid_run(lambda grid: run_local(grid, max_concurrent=2, progress=False),
                          tmp_path_factory.mktemp("local"))


def test_a_killed_process_is_started_again_and_resumes_to_the_uninterrupted_result(killed):
    root, summary = killed["root"], killed["summary"]
    assert killed["pid"] != os.getpid() and killed["midway"]
    assert killed["reference"].ran == [str(root / "reference" / "run" / "seed-0")]
    assert summary.failed == {} and summary.skipped == []
    assert summary.resumed == [str(root / "killed" / "run" / "seed-0")]     # the second start resumed
    assert summary.ran == [str(root / "killed" / "run" / "seed-1")]
    done, ref = root / "killed" / "run" / "seed-0", root / "reference" / "run" / "seed-0"
    assert rows(done) == rows(ref) and final(done) == final(ref)
    assert [r["step"] for r in rows(done)] == list(range(0, 1001, 50))
    assert rows(root / "killed" / "run" / "seed-1") != rows(ref)                # another experiment seed
    assert not (done / "run.lock").exists()
    starts = [ln for ln in (done.parent / "seed-0.log").read_text().splitlines() if ln.startswith("--- start")]
    assert [s.split("(")[1].split(")")[0] for s in starts] == ["fresh", "resuming"]


def test_a_second_local_sweep_skips_finished_runs(killed):
    assert_a_second_sweep_skips(parse_spec(SPEC, out=killed["root"] / "killed"),
                                lambda grid: run_local(grid, progress=False))


def test_a_run_that_raises_fails_once_with_its_error(tmp_path):
    """Another process writes the run (holds its lock): the worker raises, is not started again,
    and the sweep names the holder; nothing is written into the folder."""
    grid = parse_spec({**SPEC, "seeds": [5]}, out=tmp_path)
    with RunDir(grid.runs[0].path).writer():
        summary = run_local(grid, progress=False)
    (path, why), = summary.failed.items()
    assert path == str(grid.runs[0].path) and why.startswith("RunInUseError: ")
    assert f"in use by process {os.getpid()}" in why
    assert not (grid.runs[0].path / "config.json").exists()
    log = (tmp_path / "run" / "seed-5.log").read_text()
    assert log.count("--- start") == 1 and "Traceback" in log


def test_a_process_that_keeps_dying_fails_the_run_after_its_retries(tmp_path):
    grid = parse_spec({**SPEC, "seeds": [3]}, out=tmp_path)
    target, summaries = grid.runs[0].path, []
    sweeper = threading.Thread(target=lambda: summaries.append(run_local(grid, retries=0, progress=False)))
    sweeper.start()
    kill_when(target, lambda: (target / "run.lock").exists() and (target / "config.json").exists(), sweeper)
    sweeper.join(timeout=300)
    (path, why), = summaries[0].failed.items()
    assert path == str(target) and why.startswith("its process died 1 times (the last: signal 9)")
    assert run_state(grid.runs[0]) == "resume"            # the next sweep resumes it


def test_gpus_are_handed_out_least_busy_first(monkeypatch):
    assert least_busy([], []) is None
    assert least_busy(["1", "3"], []) == "1"
    assert least_busy(["1", "3"], ["1"]) == "3"
    assert least_busy(["1", "3"], ["1", "3", "3"]) == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1, 3")
    assert gpu_ids() == ["1", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_ids() == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert gpu_ids() == []


def test_the_cli_runs_a_local_sweep_without_ray(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'task = "evaluate"\nout = "{tmp_path / "runs"}"\nseeds = [4]\n[fixed]\n'
                    + "".join(f"{k} = {json.dumps(v)}\n" for k, v in TINY.items()))
    code = ("import sys; sys.modules['ray'] = None; from resolvent.cli import main; "
            f"main(['sweep', {str(spec)!r}] + sys.argv[1:])")
    bad = subprocess.run([sys.executable, "-c", code, "--engine", "local", "--address", "auto"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--address names a Ray cluster: it needs --engine ray" in bad.stderr
    ran = subprocess.run([sys.executable, "-c", code, "--engine", "local"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "(local)" in ran.stdout and "1 ran, 0 resumed, 0 already finished, 0 failed" in ran.stdout
    assert json.loads((tmp_path / "runs" / "run" / "seed-4" / "results.json").read_text())["complete"] is True
