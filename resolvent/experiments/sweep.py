"""Grids of runs on Ray: ``resolvent sweep SPEC.toml``.

The spec (``spec.py``) expands into run directories, ``OUT/CELL/seed-K``; each unfinished run
goes to Ray as a task (a local Ray, or a cluster), one CPU each, and one GPU, or a share of one
(``tasks_per_gpu``), where the cluster has GPUs. A task calls the runner in its worker process
(``spec.run_one``); a retried task (its worker was killed, its node lost) finds the run's
config.json and resumes from the last checkpoint. Finished runs are skipped, and a run that
another process is writing (its run lock) fails with that process's name instead of being
written twice.
"""
from __future__ import annotations

from dataclasses import dataclass

import ray
from tqdm.auto import tqdm

from resolvent.experiments.spec import Sweep, run_one, run_state, write_manifest


def failure(e: ray.exceptions.RayError) -> str:
    """The error a task raised (its own exception, not Ray's wrapping), or why its worker died."""
    cause = getattr(e, "cause", None)
    if cause is not None:
        return f"{type(cause).__name__}: {cause}"
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


@dataclass(frozen=True)
class TaskResources:
    """What each Ray task of a sweep asks for, and how many run at once."""

    limit: int           # runs at once
    num_gpus: float      # each task's share of a GPU (0 on a cluster without GPUs)
    env: dict            # environment variables of the tasks' workers

    def options(self, retries: int) -> dict:
        """A task's Ray options: its resources, and ``retries`` retries of a dead worker only."""
        return {"num_cpus": 1, "num_gpus": self.num_gpus, "max_retries": retries, "retry_exceptions": False,
                **({"runtime_env": {"env_vars": self.env}} if self.env else {})}


def task_resources(resources: dict, max_concurrent: int | None = None, tasks_per_gpu: int = 1) -> TaskResources:
    """One CPU a task, and where the cluster (``ray.cluster_resources()``) has GPUs, 1 /
    ``tasks_per_gpu`` of one: a run's kernels are small (one HalfCheetah control run leaves most
    of an H200 idle), so several runs share a GPU well, best under CUDA MPS. Tasks that share a
    GPU must not each take 75% of its memory up front, as JAX does by default. At once: at most
    ``max_concurrent`` [GPUs x tasks_per_gpu, else the CPUs]."""
    if tasks_per_gpu < 1:
        raise ValueError(f"tasks_per_gpu must be at least 1, not {tasks_per_gpu}")
    gpus = int(resources.get("GPU", 0))
    limit = max(1, max_concurrent or gpus * tasks_per_gpu or int(resources.get("CPU", 1)))
    shared = gpus > 0 and tasks_per_gpu > 1
    return TaskResources(limit=limit, num_gpus=1 / tasks_per_gpu if gpus else 0,
                         env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if shared else {})


def run_sweep(sweep: Sweep, address: str | None = None, max_concurrent: int | None = None, retries: int = 3,
              progress: bool = True, tasks_per_gpu: int = 1) -> dict:
    """Run every unfinished run of ``sweep`` as a Ray task (a local Ray unless ``address`` or an
    already initialised Ray says otherwise), each asking for what ``task_resources`` says, at
    most ``max_concurrent`` at once; a task whose worker dies is retried ``retries`` times,
    resuming. Returns {"skipped", "ran", "resumed": [run folders], "failed": {run folder: error}}."""
    states = {r.path: run_state(r) for r in sweep.runs}
    write_manifest(sweep)
    todo = [r for r in sweep.runs if states[r.path] != "done"]
    summary = {"skipped": [str(r.path) for r in sweep.runs if states[r.path] == "done"],
               "ran": [], "resumed": [], "failed": {}}
    if not todo:
        return summary
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"object_store_memory": 256 * 2**20}))
    try:
        use = task_resources(ray.cluster_resources(), max_concurrent, tasks_per_gpu)
        limit = use.limit
        task = ray.remote(run_one).options(**use.options(retries))
        queue, pending = list(todo), {}
        bar = tqdm(total=len(sweep.runs), initial=len(summary["skipped"]), unit="run", desc="sweep",
                   dynamic_ncols=True, disable=not progress)
        while queue or pending:
            while queue and len(pending) < limit:
                run = queue.pop(0)
                pending[task.remote(sweep.task, run.config.to_dict(), str(run.path))] = run
            (ready,), _ = ray.wait(list(pending), num_returns=1)
            run = pending.pop(ready)
            try:
                summary["resumed" if ray.get(ready) else "ran"].append(str(run.path))
            except ray.exceptions.RayError as e:
                summary["failed"][str(run.path)] = failure(e)
            bar.update(1)
            bar.set_postfix(running=len(pending), failed=len(summary["failed"]))
        bar.close()
    finally:
        if started:
            ray.shutdown()
    return summary
