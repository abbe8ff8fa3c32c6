"""Grids of runs on Ray: ``resolvent sweep SPEC.toml``.

The spec (``spec.py``) expands into run directories, ``OUT/CELL/seed-K``; each unfinished run
goes to Ray as a task (a local Ray, or a cluster), one CPU each, and one GPU, or a share of one
(``tasks_per_gpu``), where the cluster has GPUs. A task calls the runner in its worker process
(``spec.run_one``); a retried task (its worker was killed, its node lost) finds the run's
config.json and resumes from the last checkpoint. Finished runs are skipped, and a run that
another process is writing (its run lock) fails with that process's name instead of being
written twice. ``local.py`` does the same on one machine without Ray.
"""
from __future__ import annotations

import ray

from resolvent.experiments.spec import Sweep, SweepSummary, drive, plan, run_one, task_resources


def failure(e: ray.exceptions.RayError) -> str:
    """The error a task raised (its own exception, not Ray's wrapping), or why its worker died."""
    cause = getattr(e, "cause", None)
    if cause is not None:
        return f"{type(cause).__name__}: {cause}"
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def run_sweep(sweep: Sweep, address: str | None = None, max_concurrent: int | None = None, retries: int = 3,
              progress: bool = True, tasks_per_gpu: int = 1) -> SweepSummary:
    """Run every unfinished run of ``sweep`` as a Ray task (a local Ray unless ``address`` or an
    already initialised Ray says otherwise), each asking for what ``task_resources`` says, at
    most ``max_concurrent`` at once; a task whose worker dies is retried ``retries`` times,
    resuming. Returns what became of every run."""
    todo, summary = plan(sweep)
    if not todo:
        return summary
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"object_store_memory": 256 * 2**20}))
    try:
        use = task_resources(ray.cluster_resources(), max_concurrent, tasks_per_gpu)
        task = ray.remote(run_one).options(**use.options(retries))

        def wait(pending: dict) -> tuple:
            (ready,), _ = ray.wait(list(pending), num_returns=1)
            try:
                return ready, ray.get(ready), None
            except ray.exceptions.RayError as e:
                return ready, None, failure(e)

        return drive(sweep, todo, summary, use.limit,
                     lambda run: task.remote(sweep.task, run.config.to_dict(), str(run.path)), wait, progress)
    finally:
        if started:
            ray.shutdown()
