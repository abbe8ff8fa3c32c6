"""Grids of runs on one machine without Ray: ``resolvent sweep SPEC --engine local``.

The same runs, skips, resumes and refusals as the Ray engine (``sweep.py``), through the same
loop (``spec.drive``): each unfinished run in a Python process of its own (``python -m
resolvent.experiments.local``, which calls ``spec.run_one``), at most so many at once. A process
that dies (killed, out of memory, crashed) is started again up to ``retries`` times and resumes
from the run's last checkpoint; a run that raises fails at once with its error, as a Ray task
does. Where the machine has NVIDIA GPUs, each process is given one (``CUDA_VISIBLE_DEVICES``),
the least busy, ``tasks_per_gpu`` of them sharing it. Each run's output goes to
``OUT/CELL/seed-K.log``, beside its folder. Made for a machine where Ray is not installed or
wanted: a lent GPU machine without a network, a laptop.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from resolvent.experiments.rundir import RunDir
from resolvent.experiments.spec import Sweep, SweepRun, SweepSummary, drive, plan, run_one, task_resources

RAISED = 3      # a worker's exit code when its run raised (not retried)
MARK = "sweep-local error: "


def gpu_ids() -> list[str]:
    """The GPUs a run may be given: ``CUDA_VISIBLE_DEVICES`` where it is set, else every GPU
    ``nvidia-smi -L`` lists, none without NVIDIA's tools."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(ln for ln in listed.splitlines() if ln.startswith("GPU "))]


def least_busy(gpus: list[str], busy: list[str]) -> str | None:
    """The GPU of ``gpus`` the fewest running runs (``busy``, one entry each) hold; the first of
    them on a tie; None without GPUs."""
    return min(gpus, key=busy.count) if gpus else None


@dataclass
class Attempt:
    """A run's process now, and how many times it was started."""

    process: subprocess.Popen
    gpu: str | None
    resumed: bool
    starts: int


class Workers:
    """The runs' processes: ``start`` and ``wait`` for ``spec.drive``."""

    def __init__(self, sweep: Sweep, retries: int, gpus: list[str], env: dict):
        self.sweep, self.retries, self.gpus, self.env = sweep, retries, gpus, env
        self.attempts: dict[Path, Attempt] = {}

    def launch(self, run: SweepRun, starts: int) -> Attempt:
        gpu = least_busy(self.gpus, [a.gpu for a in self.attempts.values() if a.process.poll() is None])
        env = {**os.environ, **self.env, **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {})}
        resumed = RunDir(run.path).config_path.is_file()
        run.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log(run), "a") as log:
            log.write(f"\n--- start {starts} ({'resuming' if resumed else 'fresh'}) {time.strftime('%F %T')}\n")
            log.flush()
            process = subprocess.Popen(
                [sys.executable, "-m", "resolvent.experiments.local", self.sweep.task, str(run.path),
                 json.dumps(run.config.to_dict())], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env)
        return Attempt(process, gpu, resumed, starts)

    def start(self, run: SweepRun) -> Path:
        self.attempts[run.path] = self.launch(run, 1)
        return run.path

    def wait(self, pending: dict) -> tuple:
        """The first of ``pending`` to end for good: finished, raised, or dead ``retries`` + 1 times."""
        while True:
            for path, run in pending.items():
                attempt = self.attempts[path]
                code = attempt.process.poll()
                if code is None:
                    continue
                if code == 0:
                    return path, attempt.resumed, None
                if code == RAISED:
                    return path, None, self.error(run)
                if attempt.starts > self.retries:
                    how = f"signal {-code}" if code < 0 else f"exit code {code}"
                    return path, None, f"its process died {attempt.starts} times (the last: {how}); see {self.log(run)}"
                self.attempts[path] = self.launch(run, attempt.starts + 1)    # resumes from its checkpoints
            time.sleep(0.2)

    def log(self, run: SweepRun) -> Path:
        """The run's output, ``OUT/CELL/seed-K.log``, beside its folder (every start appends)."""
        return run.path.parent / f"{run.path.name}.log"

    def error(self, run: SweepRun) -> str:
        """The error a worker wrote last in the run's log."""
        lines = [ln for ln in self.log(run).read_text(errors="replace").splitlines() if ln.startswith(MARK)]
        return lines[-1][len(MARK):] if lines else f"it raised; see {self.log(run)}"

    def stop(self) -> None:
        """Stop every process still running (their runs resume from their checkpoints)."""
        alive = [a.process for a in self.attempts.values() if a.process.poll() is None]
        for p in alive:
            p.terminate()
        for p in alive:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def run_local(sweep: Sweep, max_concurrent: int | None = None, retries: int = 3, progress: bool = True,
              tasks_per_gpu: int = 1) -> SweepSummary:
    """Run every unfinished run of ``sweep`` in a process of its own on this machine, at most
    ``max_concurrent`` at once [its GPUs x ``tasks_per_gpu``, else its CPUs]; a process that dies
    is started again ``retries`` times, resuming. Stopping the sweep (Ctrl-C, SIGTERM) stops its
    runs, which resume when it is started again. Returns what became of every run."""
    todo, summary = plan(sweep)
    if not todo:
        return summary
    gpus = gpu_ids()
    use = task_resources({"CPU": os.cpu_count() or 1, "GPU": len(gpus)}, max_concurrent, tasks_per_gpu)
    workers = Workers(sweep, retries, gpus, use.env)

    def interrupted(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    main_thread = threading.current_thread() is threading.main_thread()   # only it may handle signals
    before = signal.signal(signal.SIGTERM, interrupted) if main_thread else None
    try:
        return drive(sweep, todo, summary, use.limit, workers.start, workers.wait, progress)
    finally:
        workers.stop()
        if main_thread:
            signal.signal(signal.SIGTERM, before)


def main(argv: list[str]) -> int:
    """A worker: ``python -m resolvent.experiments.local TASK RUN_PATH CONFIG_JSON``; exit code 0
    when the run finished, ``RAISED`` when it raised (its error on the log's last line)."""
    task, path, config = argv
    try:
        run_one(task, json.loads(config), path)
    except Exception as e:
        traceback.print_exc()
        print(f"{MARK}{type(e).__name__}: {e}".replace("\n", " "), flush=True)
        return RAISED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
