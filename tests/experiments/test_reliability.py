"""No silent loss, no raw tracebacks, no silently changed options: one writer per run
directory, damaged caches and datasets, a full disk, kills before the first checkpoint."""
import errno
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from resolvent.cli import main
from resolvent.experiments import EvaluateConfig, RunDir, run_evaluate
from resolvent.experiments.rundir import RunInUseError
from resolvent.io import DiskFullError, atomic_write_bytes

TINY = dict(horizons=(3,), steps=20, log_every=10, checkpoint_every=10, seeds=1, m=16, n_initial=4,
            n_train_rewards=4, n_test_rewards=2, hidden=(16,), features=8, gt_tol=1e-3,
            methods=("attention",))


def snapshot(path):
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_second_writer_stops_at_once_and_a_stale_lock_does_not_block(tmp_path):
    run = RunDir(tmp_path / "run")
    run_evaluate(EvaluateConfig(**TINY), run.path, plot=False)
    before = snapshot(run.path)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run.lock_path.write_text(f"{holder.pid} {socket.gethostname()} resolvent evaluate")
        with pytest.raises(RunInUseError, match=f"in use by process {holder.pid}"):
            run_evaluate(EvaluateConfig(**TINY), run.path, resume=True, plot=False)
        with pytest.raises(RunInUseError):
            run_evaluate(EvaluateConfig(**TINY), run.path, plot=False)
        res = CliRunner().invoke(main, ["evaluate", "--out", str(run.path), "--resume"])
        assert res.exit_code == 2 and f"process {holder.pid}" in res.output and "Traceback" not in res.output
        run.lock_path.unlink()
        assert snapshot(run.path) == before                  # the running one is untouched
    finally:
        holder.kill()
        holder.wait()
    run.lock_path.write_text(f"{holder.pid} {socket.gethostname()} killed")   # its process is gone
    run_evaluate(EvaluateConfig(**TINY), run.path, resume=True, plot=False)
    assert not run.lock_path.exists()


def test_concurrent_cli_runs_on_one_directory(tmp_path):
    """Two real processes on one --out: exactly one trains, the other says who holds it."""
    out = tmp_path / "x"
    cmd = [sys.executable, "-m", "resolvent.cli", "evaluate", "--methods", "attention", "--seeds", "1",
           "--m", "16", "--log-every", "1000", "--checkpoint-every", "1000"]
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen([*cmd, "--steps", "3000", "--out", str(out)], stdout=log, stderr=log)
    while not (out / "metrics.jsonl").exists() and first.poll() is None:   # it is training
        time.sleep(0.05)
    second = subprocess.run([*cmd, "--steps", "1000", "--seed", "1", "--out", str(out)],
                            capture_output=True, text=True)
    first.wait(timeout=300)
    log.close()
    assert first.returncode == 0, (tmp_path / "first.log").read_text()[-2000:]
    assert second.returncode == 2 and "in use by process" in second.stderr
    assert "Traceback" not in second.stderr
    assert {r["seed"] for r in RunDir(out).read_metrics()} == {0}


def test_kill_before_the_first_checkpoint_then_resume_has_no_duplicate_rows(tmp_path, monkeypatch):
    run_evaluate(EvaluateConfig(**TINY), tmp_path / "full", plot=False)

    def dying(self, method, tree):
        raise KeyboardInterrupt

    original = RunDir.save_checkpoint
    monkeypatch.setattr(RunDir, "save_checkpoint", dying)
    with pytest.raises(KeyboardInterrupt):
        run_evaluate(EvaluateConfig(**TINY), tmp_path / "killed", plot=False)
    monkeypatch.setattr(RunDir, "save_checkpoint", original)
    run_evaluate(EvaluateConfig(**TINY), tmp_path / "killed", resume=True, plot=False)
    rows = lambda p: [(r["method"], r["step"], r["test_mse"]) for r in RunDir(p).read_metrics()]  # noqa: E731
    assert rows(tmp_path / "killed") == rows(tmp_path / "full")


def test_full_disk_leaves_no_temporary_file_and_changes_nothing(tmp_path, monkeypatch):
    import resolvent.io as rio

    target = tmp_path / "config.json"
    target.write_text("saved")

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rio.os, "fsync", no_space)
    with pytest.raises(DiskFullError, match="no space left"):
        atomic_write_bytes(target, b"new")
    assert target.read_text() == "saved" and [p.name for p in tmp_path.iterdir()] == ["config.json"]
    monkeypatch.undo()

    out = tmp_path / "run"
    run_evaluate(EvaluateConfig(**TINY), out)
    (out / "results.json").unlink()                        # resuming must write, on a full disk
    before = snapshot(out)
    monkeypatch.setattr(rio.os, "fsync", no_space)
    monkeypatch.setattr("resolvent.experiments.rundir.os.fsync", no_space)
    res = CliRunner().invoke(main, ["evaluate", "--out", str(out), "--resume"])
    assert res.exit_code == 2 and "no space left" in res.output and "Traceback" not in res.output
    assert snapshot(out) == before and not list(out.rglob("*.tmp"))


def test_two_writers_of_one_file_at_once_both_finish(tmp_path, monkeypatch):
    """Runs filling one cache (the ground truth of a dataset that ten seeds share) write one file
    at once: a second write that starts and ends while the first is between its write and its
    rename must not take the first one's temporary file (the rename then failed, and the run)."""
    import resolvent.io as rio

    target, fsync, nested = tmp_path / "cache.npz", rio.os.fsync, []

    def other_process_writes_meanwhile(fd):
        fsync(fd)
        if not nested:
            nested.append(True)
            atomic_write_bytes(target, b"second")

    monkeypatch.setattr(rio.os, "fsync", other_process_writes_meanwhile)
    atomic_write_bytes(target, b"first")
    assert nested and target.read_bytes() == b"first" and [p.name for p in tmp_path.iterdir()] == ["cache.npz"]


def test_runs_asking_for_one_ground_truth_at_once_roll_it_out_once(capsys):
    """A sweep's seeds of one cell need the same cached truth: the first rolls it out, the others
    wait on its lock and read it (each had rolled it out again, 20 at once on a GPU machine)."""
    import threading
    import time

    from resolvent.evaluation.ground_truth import GroundTruth, cached_ground_truth

    made = []

    def make():
        made.append(1)
        time.sleep(0.5)                                                   # the others arrive meanwhile
        return GroundTruth(np.zeros((2, 3)), np.zeros((2, 1)), {"obs": np.ones((2, 4, 3))},
                           np.ones((2, 4), bool), 0.9)

    got = []
    threads = [threading.Thread(target=lambda: got.append(cached_ground_truth("once.npz", ("obs",), 0.9, make)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert made == [1] and len(got) == 3
    for gt in got:
        np.testing.assert_array_equal(gt.features["obs"], np.ones((2, 4, 3)))
    assert "waiting for another process making the ground truth once.npz" in capsys.readouterr().err


def test_damaged_ground_truth_cache_is_rebuilt(tmp_path):
    from resolvent.evaluation import load_ground_truth
    from resolvent.families import get_family
    from resolvent.paths import cache_dir
    from resolvent.policies import load_target_policy

    fam = get_family("pendulum-angle")
    actor = load_target_policy(fam.name)
    args = (fam, actor, 3, 0.99, 1e-2, 11)
    good = load_ground_truth(*args)
    path = next(p for p in cache_dir("ground_truth").glob("*seed11.npz"))
    path.write_bytes(path.read_bytes()[:100])                            # truncated
    np.testing.assert_array_equal(load_ground_truth(*args).obs0, good.obs0)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["f_obs"][0, 3, 1] = np.nan                                     # NaN inside
    np.savez_compressed(path, **arrays)
    back = load_ground_truth(*args)
    assert np.all(np.isfinite(back.features["obs"]))
    np.testing.assert_array_equal(back.features["obs"], good.features["obs"])


def test_damaged_minari_file_names_the_rebuild_command():
    import h5py
    from minari.storage.datasets_root_dir import get_dataset_path

    from resolvent.data import dataset_id, load_transitions
    from resolvent.families import get_family

    fam = get_family("pendulum-angle")
    load_transitions(fam, "expert", seed=7)
    path = get_dataset_path(dataset_id(fam, "expert", 7)) / "data" / "main_data.hdf5"
    with h5py.File(path, "a") as f:
        del f["episode_3"]
    with pytest.raises(ValueError, match="--kind expert --seed 7 --rebuild"):
        load_transitions(fam, "expert", seed=7)
    res = CliRunner().invoke(main, ["dataset", "pendulum-angle", "--kind", "expert", "--seed", "7"])
    assert res.exit_code == 2 and "--rebuild" in res.output and "Traceback" not in res.output
    assert len(load_transitions(fam, "expert", seed=7, rebuild=True)["obs"]) == 20_000


def test_bad_inputs_to_a_model_and_a_dataset(tmp_path):
    import resolvent
    from resolvent.data import validate_transitions
    from resolvent.families import get_family
    from resolvent.model import CheckpointError

    run_evaluate(EvaluateConfig(**{**TINY, "methods": ("attention", "vanilla")}), tmp_path, plot=False)
    model = resolvent.load(tmp_path, "attention")
    obs = np.zeros((2, 3), np.float32)
    obs[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"observations have a non-finite value .* row 1"):
        model.q_values(model.family_reward(0.1), obs, np.zeros((2, 1)))
    models = tmp_path / "models"
    os.replace(models / "vanilla.params", models / "attention.params")   # another model's weights
    with pytest.raises(CheckpointError, match="belong to another model"):
        resolvent.load(tmp_path, "attention")
    res = CliRunner().invoke(main, ["q", str(tmp_path), "--theta0", "0.1"])
    assert res.exit_code == 2 and "another model" in res.output

    import gymnasium as gym
    fam = get_family("pendulum-angle")
    n = 5
    data = {"obs": np.zeros((n, 3)), "action": np.zeros((n, 1)), "next_obs": np.zeros((n, 3)),
            "terminated": np.zeros(n, bool), "truncated": np.zeros(n, bool)}
    data["action"][3, 0] = 7.5
    with pytest.raises(ValueError, match=r"action 7.5 \(dimension 0\) at transition 3 is outside"):
        validate_transitions(data, fam, 3, 1, gym.make("Pendulum-v1").action_space)


def test_q_and_plot_on_a_folder_that_is_not_a_run(tmp_path):
    for cmd in (["q", str(tmp_path), "--theta0", "0.1"], ["plot", str(tmp_path)]):
        res = CliRunner().invoke(main, cmd)
        assert res.exit_code == 2 and "no config.json" in res.output
    (tmp_path / "config.json").write_text("{not json")
    res = CliRunner().invoke(main, ["plot", str(tmp_path)])
    assert res.exit_code == 2 and "corrupt" in res.output


def test_resume_refuses_conflicting_options(tmp_path):
    out = tmp_path / "r"
    run_evaluate(EvaluateConfig(**TINY), out, plot=False)
    before = snapshot(out)
    res = CliRunner().invoke(main, ["evaluate", "--out", str(out), "--resume", "--steps", "40",
                                    "--methods", "sf"])
    assert res.exit_code == 2 and "drop --methods, --steps" in res.output
    assert snapshot(out) == before
