"""`resolvent sweep --tasks-per-gpu N`: what each Ray task asks for, and on a local Ray that
declares one GPU, two tasks that share it run at once with JAX's preallocation off."""
import os
import time
from pathlib import Path

import pytest
import ray
from click.testing import CliRunner

from resolvent.cli import main
from resolvent.experiments.spec import TaskResources, task_resources

NO_PREALLOCATE = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def test_a_gpu_is_shared_only_when_asked():
    assert task_resources({"CPU": 2}) == TaskResources(2, 0, {})
    assert task_resources({"CPU": 2}, tasks_per_gpu=4) == TaskResources(2, 0, {})   # no GPU to share
    assert task_resources({"CPU": 16, "GPU": 1}) == TaskResources(1, 1.0, {})
    assert task_resources({"CPU": 16, "GPU": 2}, tasks_per_gpu=5) == TaskResources(10, 0.2, NO_PREALLOCATE)
    assert task_resources({"CPU": 16, "GPU": 1}, max_concurrent=3, tasks_per_gpu=5).limit == 3
    with pytest.raises(ValueError, match="tasks_per_gpu must be at least 1, not 0"):
        task_resources({"CPU": 2}, tasks_per_gpu=0)


def test_the_cli_refuses_a_share_below_one(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('task = "evaluate"\n[fixed]\nfamily = "pendulum-angle"\n')
    r = CliRunner().invoke(main, ["sweep", str(spec), "--tasks-per-gpu", "0"])
    assert r.exit_code == 2 and "--tasks-per-gpu" in r.output


def test_two_tasks_share_one_gpu(tmp_path):
    def meet(folder: str, name: str) -> tuple:
        """Mark this task started, wait (at most a minute) until both have: only tasks that run
        at once both return. (Defined here: Ray's workers cannot import a test module.)"""
        Path(folder, name).touch()
        for _ in range(600):
            if len(list(Path(folder).iterdir())) == 2:
                return os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE"), tuple(ray.get_gpu_ids())
            time.sleep(0.1)
        raise TimeoutError("the other task never started")

    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 2**20)
    try:
        use = task_resources(ray.cluster_resources(), tasks_per_gpu=2)
        assert use == TaskResources(2, 0.5, NO_PREALLOCATE)
        task = ray.remote(meet).options(**use.options(retries=0))
        out = ray.get([task.remote(str(tmp_path), "a"), task.remote(str(tmp_path), "b")], timeout=120)
    finally:
        ray.shutdown()
    assert out == [("false", (0,)), ("false", (0,))]    # both on GPU 0, at once, not preallocating
