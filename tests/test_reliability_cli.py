"""Issue 19's cases, each reproduced: nothing saved is lost (the shipped policy, a dataset another
process built), user code that raises gives one clear error naming it, and options that were
ignored or silently wrong are refused, by name, before anything is trained or written."""
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import minari
import numpy as np
import pytest
from click.testing import CliRunner
from minari.data_collector import EpisodeBuffer

import resolvent
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.cli import main
from resolvent.experiments import EvaluateConfig, RunDir, run_evaluate
from resolvent.policies.td3 import shipped_dir

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--seeds", "1", "--steps", "20", "--log-every", "10", "--checkpoint-every", "10", "--m", "16"]
FIT = dict(onestep=OneStepConfig(hidden=(16,), steps=20), horizons=(2,),
           steps=20, seeds=1, log_every=10, checkpoint_every=10, m=16, n_initial=4, gt_tol=1e-2,
           sf_fit_points=64, hidden=(16,), features=8, plot=False)


def tree_hash(path: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir()) if p.is_file()}


def snapshot(path: Path) -> dict:
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def controller(obs):
    """A Pendulum-v1 target policy: torque against the angular velocity."""
    return np.clip(-2.0 * np.asarray(obs)[:, 2:3], -2.0, 2.0).astype(np.float32)


CONTROLLER = f"{Path(__file__)}:controller"


@pytest.fixture(scope="module")
def pendulum():
    """A small Minari dataset of Pendulum-v1 (random actions, 4 episodes of 50 steps)."""
    env = gym.make("Pendulum-v1")
    rng = np.random.default_rng(0)
    buffers = []
    for i in range(4):
        obs, _ = env.reset(seed=i)
        o, a, r = [obs], [], []
        for t in range(50):
            act = rng.uniform(-2, 2, 1).astype(np.float32)
            obs, rew, *_ = env.step(act)
            o.append(obs), a.append(act), r.append(rew)
        buffers.append(EpisodeBuffer(id=i, observations=np.asarray(o, np.float32), actions=np.asarray(a),
                                     rewards=np.asarray(r, np.float32), terminations=np.zeros(50, bool),
                                     truncations=np.r_[np.zeros(49, bool), True]))
    did = "tests/reliab-pendulum-v0"
    if did in minari.list_local_datasets():
        minari.delete_dataset(did)
    return minari.create_dataset_from_buffers(did, buffers, env=env, algorithm_name="random",
                                              author="t", author_email="t@t.t", code_permalink="https://x")


@pytest.fixture()
def policy_file(tmp_path):
    """Write a policy module; returns ``MODULE_FILE:policy`` for the CLI."""
    def write(body: str) -> str:
        path = tmp_path / "pol.py"
        path.write_text("import numpy as np\n" + body)
        return f"{path}:policy"
    return write


def cli(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in res.output, res.output
    return res


def assert_error(res, *fragments):
    assert res.exit_code == 2, res.output
    line = res.output.strip().splitlines()[-1]
    assert line.startswith("error: "), res.output
    for f in fragments:
        assert f in res.output, res.output


# ---- 1. target --retrain never writes into the package without being asked -------------------

def test_retrain_with_bad_steps_is_refused_and_the_shipped_policy_kept(tmp_path):
    before = tree_hash(shipped_dir())
    for steps in ("-5", "0"):
        assert_error(cli("target", "pendulum-angle", "--retrain", "--steps", steps),
                     "TD3 steps must be an integer >= 1")
    assert_error(cli("target", "pendulum-angle", "--steps", "100"), "--steps go with --retrain")
    assert_error(cli("target", "pendulum-angle", "--retrain", "--install", "--out", tmp_path), "not both")
    with pytest.raises(ValueError, match="needs out_dir"):
        from resolvent.families import get_family
        from resolvent.policies.td3 import train_td3
        train_td3(get_family("pendulum-angle"), steps=10)
    assert tree_hash(shipped_dir()) == before


def test_retrain_without_a_destination_writes_under_resolvent_home():
    pytest.importorskip("sbx")
    before = tree_hash(shipped_dir())
    res = cli("target", "pendulum-angle", "--retrain", "--steps", "200", "--seed", "3")
    assert res.exit_code == 0, res.output
    home = Path(os.environ["RESOLVENT_HOME"]) / "policies" / "pendulum-angle"
    assert (home / "pendulum-angle.npz").is_file() and "the shipped policy is unchanged" in res.output
    assert tree_hash(shipped_dir()) == before


# ---- 2. two processes building one dataset id --------------------------------------------

def test_concurrent_dataset_builds_of_one_id_both_succeed(tmp_path):
    env = {**os.environ, "MINARI_DATASETS_PATH": str(tmp_path / "minari"), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "resolvent.cli", "dataset", "pendulum-angle", "--kind", "expert", "--seed", "3"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
        assert "resolvent/pendulum-angle/expert-seed3-v0: 20000 transitions" in out
    assert any("waiting for another process" in err for _, err in outs)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "waiting" not in again.stderr


# ---- 3-7, 13: user code and datasets that do not fit: one error naming them ------------------

def data_args(policy, *more):
    return ["evaluate", "--data", "tests/reliab-pendulum-v0", "--policy", policy, "--methods", "attention",
            *TINY, *more]


def test_policy_and_probe_files_that_do_not_run(pendulum, policy_file, tmp_path):
    assert_error(cli(*data_args(policy_file("def policy(o) return o\n"), "--out", tmp_path / "a")),
                 "SyntaxError", "pol.py")
    probes = tmp_path / "probes.py"
    probes.write_text("PROBES = {'x': lambda f: f['obs'][:, 0]\n")
    assert_error(cli(*data_args(policy_file("def policy(o):\n    return -o[:, 2:3]\n"), "--probes", probes,
                                "--out", tmp_path / "b")), "probe rewards", "SyntaxError")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.mark.parametrize("body, fragments", [
    # 4: raises on every batch but the first check's 64 observations (policy_fingerprint's 256)
    ("def policy(o):\n    if len(o) != 64: raise TypeError('only batches of 64')\n    return -o[:, 2:3]\n",
     ("failed on observations of shape (256, 3)", "TypeError: only batches of 64", "pol.py:policy")),
    # a user's ValueError is said to come from the policy
    ("def policy(o):\n    raise ValueError('no')\n", ("the policy", "failed on the dataset's observations", "no")),
    # 13: NaN on states past the first check's 64 (fast ones), met at next states or in the rollouts
    ("def policy(o):\n    return np.where(np.abs(o[:, 2:3]) > FAST, np.nan, -o[:, 2:3])\n",
     ("returned non-finite actions", "pol.py:policy")),
])
def test_a_policy_failing_after_the_first_check_is_named(pendulum, policy_file, tmp_path, body, fragments):
    from resolvent.data.user import load_dataset

    speed = np.abs(load_dataset(pendulum)[1]["obs"][:, 2])
    fast = speed[:64].max() + 1e-3                                         # never in the first check
    assert (speed > fast).any()
    body = body.replace("FAST", repr(float(fast)))
    assert_error(cli(*data_args(policy_file(body), "--out", tmp_path / "r")), *fragments)
    assert not (tmp_path / "r" / "config.json").exists()


def test_rewards_and_probes_that_raise_or_are_not_callable(pendulum, tmp_path):
    with pytest.raises(ValueError, match=r"probe reward 'b' failed on the dataset's transitions: ZeroDivisionError"):
        resolvent.fit(pendulum, controller, out=tmp_path / "a", probes={"b": lambda f: 1 / 0}, **FIT)
    with pytest.raises(ValueError, match=r"training reward 'c' failed .*KeyError|training reward 'c' asked"):
        resolvent.fit(pendulum, controller, out=tmp_path / "b", rewards={"c": lambda f: {}["x"]}, **FIT)
    with pytest.raises(ValueError, match=r"probes: 'x' -> int is not a reward"):
        resolvent.fit(pendulum, controller, out=tmp_path / "c", probes={"x": 3}, **FIT)
    with pytest.raises(ValueError, match=r"rewards must be a dict"):
        resolvent.fit(pendulum, controller, out=tmp_path / "d", rewards=[lambda f: f["reward"]], **FIT)
    assert not any((tmp_path / k).exists() for k in "abcd")


def test_dict_observations_and_mismatched_environment(pendulum, tmp_path):
    space = gym.spaces.Dict({"x": gym.spaces.Box(-1, 1, (2,)), "y": gym.spaces.Box(-1, 1, (1,))})
    buf = EpisodeBuffer(observations={"x": np.zeros((6, 2), np.float32), "y": np.zeros((6, 1), np.float32)},
                        actions=np.zeros((5, 1), np.float32), rewards=np.zeros(5),
                        terminations=np.zeros(5, bool), truncations=np.r_[np.zeros(4, bool), True])
    ds = minari.create_dataset_from_buffers("tests/reliab-dict-v0", [buf], observation_space=space,
                                            action_space=gym.spaces.Box(-1, 1, (1,)), algorithm_name="d",
                                            author="t", author_email="t@t.t", code_permalink="https://x")
    with pytest.raises(ValueError, match=r"needs flat \(Box\) observations and actions; the dataset's observations"):
        resolvent.fit(ds, controller, out=tmp_path / "a", **FIT)
    res = cli(*data_args("tests/test_reliability_cli.py:controller", "--env", "MountainCarContinuous-v0",
                         "--out", tmp_path / "b"))
    assert_error(res, "MountainCarContinuous-v0 has observations (2,)", "(3,)")


# ---- 8-10, 14, 18: runs on a dataset of one's own ------------------------------------------

@pytest.fixture(scope="module")
def data_run(pendulum, tmp_path_factory):
    out = tmp_path_factory.mktemp("data") / "run"
    resolvent.fit(pendulum.spec.dataset_id, CONTROLLER, out=out, method="attention", **FIT)
    return out


def test_rollout_of_a_dataset_run_and_a_negative_env_seed(data_run):
    assert_error(cli("rollout", data_run, "--param", ".5"), "not an optimize run on a family")
    assert_error(cli("rollout", data_run, "--param", ".5", "--env-seed", "-1"), "--env-seed must be >= 0")


def test_damaged_run_files_are_named(data_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(data_run, run)
    metrics = (run / "metrics.jsonl").read_text()
    (run / "metrics.jsonl").write_text(metrics + "123\n")
    assert_error(cli("plot", run), "metrics.jsonl line", "not a metrics row")
    assert_error(cli("evaluate", "--out", run, "--resume"), "metrics.jsonl line")
    (run / "metrics.jsonl").write_text(metrics)
    meta = (run / "models" / "attention.json").read_text()
    (run / "models" / "attention.json").write_text(meta.replace('"arch"', '"arch_"'))
    with pytest.raises(resolvent.model.CheckpointError, match=r"attention.json .* is damaged \(KeyError"):
        resolvent.load(run, "attention")
    (run / "models" / "attention.json").write_text(meta)
    config = (run / "config.json").read_text()
    (run / "config.json").write_text(config.replace('"steps": 20', '"steps": "20"'))
    assert_error(cli("evaluate", "--out", run, "--resume"), "config.json is damaged", "steps must be an integer")
    (run / "config.json").write_text(config)
    results = (run / "results.json").read_text()
    (run / "results.json").write_text(results[:40])                       # truncated
    assert_error(cli("evaluate", "--out", run, "--resume"), "results.json is corrupt")
    (run / "results.json").write_text(results)
    saved = lambda p: {k: v for k, v in snapshot(p).items() if k.suffix != ".png"}   # noqa: E731 - plots are redrawn
    assert saved(run) == saved(data_run)


def test_fit_checks_its_arguments_before_training(pendulum, data_run, tmp_path):
    with pytest.raises(ValueError, match="'fqe' is the per-reward oracle"):
        resolvent.fit(pendulum, controller, out=tmp_path / "a", method="fqe", **FIT)
    with pytest.raises(ValueError, match="steps must be an integer, got 99.9"):
        resolvent.fit(pendulum, controller, out=tmp_path / "b", **{**FIT, "steps": 99.9})
    with pytest.raises(ValueError, match=r"unknown fit options \['learning_rate'\]"):
        resolvent.fit(pendulum, controller, out=tmp_path / "c", learning_rate=1e-3, **FIT)
    assert not any((tmp_path / k).exists() for k in "abc")
    before = snapshot(data_run)
    for change, message in (({"steps": 400}, r"differs in steps \(20, given 400\)"),
                            ({"method": "sf"}, r"differs in methods \(\('attention',\), given \('sf',\)\)")):
        with pytest.raises(ValueError, match=message):
            resolvent.fit(pendulum, controller, out=data_run, resume=True, **{**FIT, **change})
    with pytest.raises(ValueError, match="trained for another target policy"):
        resolvent.fit(pendulum, lambda o: controller(o) * 0.5, out=data_run, resume=True, **FIT)
    assert snapshot(data_run) == before
    resolvent.fit(pendulum, controller, out=data_run, resume=True, **FIT)    # the same call again
    resolvent.fit(pendulum, controller, out=data_run, resume=True, plot=False)   # or none of the options
    assert snapshot(data_run).keys() == before.keys()


def test_garbage_prior_is_rewritten_on_resume(pendulum, data_run, tmp_path):
    import shutil

    from resolvent.rewards import PriorStats

    run = tmp_path / "run"
    shutil.copytree(data_run, run)
    good = PriorStats.load(run / "prior.npz")
    (run / "prior.npz").write_bytes(b"garbage")
    resolvent.fit(pendulum, controller, out=run, resume=True, plot=False)
    back = PriorStats.load(run / "prior.npz")
    np.testing.assert_array_equal(back.mean, good.mean)
    np.testing.assert_array_equal(back.std, good.std)


# ---- 11, 12, messages: options refused by name ----------------------------------------------

def test_bad_options_are_refused_by_name(pendulum, tmp_path):
    for lr in ("nan", "-1", "0", "inf"):
        assert_error(cli("evaluate", "--lr", lr, *TINY, "--out", tmp_path / "a"), "lr must be > 0 and finite")
    assert_error(cli("evaluate", "--seed", "-1", *TINY, "--out", tmp_path / "a"), "seed must be >= 0")
    assert_error(cli("optimize", "--seed", "-1", "--out", tmp_path / "a"), "seed must be >= 0")
    assert_error(cli("dataset", "pendulum-angle", "--seed", "-1"), "--seed must be >= 0")
    assert_error(cli("target", "pendulum-angle", "--retrain", "--seed", "-1"), "--seed must be >= 0")
    assert_error(cli(*data_args("tests/test_reliability_cli.py:controller", "--dataset", "bogus",
                                "--out", tmp_path / "a")), "dataset ('bogus')", "--dataset goes with a FAMILY")
    assert_error(cli(*data_args("tests/test_reliability_cli.py:controller", "--ref-actions", "half-policy",
                                "--out", tmp_path / "a")), "half-policy")
    assert not (tmp_path / "a").exists()


def test_messages_name_what_the_folder_is(tmp_path):
    import socket

    from resolvent.experiments import OptimizeConfig, run_optimize

    opt = tmp_path / "opt"
    run_optimize(OptimizeConfig(steps=10, eval_every=10, checkpoint_every=10, seeds=1, m=16, eval_episodes=1,
                                n_actions=3, methods=("maxout",)), opt)
    assert_error(cli("evaluate", "--out", opt, "--resume"), "is an 'optimize' run, not evaluate",
                 f"resolvent optimize --out {opt} --resume")
    assert_error(cli("q", opt, "--theta0", ".5", "--points", "-3"), "--points must be >= 1")
    labelled = cli("q", opt, "--method", "maxout", "--theta0", ".5", "--points", "1")   # 16: not called an MSE
    assert labelled.exit_code == 0 and "optimal Q" in labelled.output and "MSE" not in labelled.output
    for cmd in (["q", tmp_path, "--theta0", ".5"], ["plot", tmp_path]):
        res = cli(*cmd)
        assert_error(res, "not a resolvent run directory")
        assert "resume" not in res.output
    RunDir(opt).lock_path.write_text(f"1 {socket.gethostname()} resolvent optimize")   # PID 1: reused
    assert_error(cli("optimize", "--out", opt, "--resume"), "in use by process 1", f"delete {opt}/run.lock")
    RunDir(opt).lock_path.unlink()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])   # a PID reused
    try:
        lock = RunDir(tmp_path / "reused")
        lock.path.mkdir()
        lock.lock_path.write_text(f"{holder.pid} {socket.gethostname()} resolvent evaluate")
        os.utime(lock.lock_path, (time.time() - 3600, time.time() - 3600))  # written before it started
        with lock.writer():
            assert lock.lock_path.read_text().startswith(f"{os.getpid()} ")   # taken over
    finally:
        holder.kill()
        holder.wait()

    # 15: a control model's policy refuses NaN and inf observations, as q_values does
    policy = resolvent.load(opt, "maxout").policy(lambda f: -f["obs"][:, 2] ** 2)
    assert policy(np.zeros(3, np.float32)).shape == (1,)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="non-finite value"):
            policy(np.array([0.0, bad, 0.0], np.float32))


# ---- 17: figures draw finished runs, and say when there are several ----------------------

def test_figure_draws_the_finished_run_not_a_killed_one(tmp_path):
    import json
    import shutil

    from resolvent.experiments.plots import find_runs

    tiny = dict(steps=20, log_every=10, checkpoint_every=10, seeds=1, m=16, n_initial=4, n_train_rewards=4,
                n_test_rewards=2, hidden=(16,), features=8, gt_tol=1e-3, methods=("attention",))
    run_evaluate(EvaluateConfig(**tiny), tmp_path / "b-finished", plot=False)
    shutil.copytree(tmp_path / "b-finished", tmp_path / "c-killed")
    res = json.loads((tmp_path / "c-killed" / "results.json").read_text())
    res["methods"]["attention"]["steps"] = 10
    (tmp_path / "c-killed" / "results.json").write_text(json.dumps(res))
    assert find_runs(tmp_path) == {("pendulum-angle", "expert"): tmp_path / "b-finished"}
    shutil.copytree(tmp_path / "b-finished", tmp_path / "a-finished")
    with pytest.warns(UserWarning, match="2 finished evaluate runs of pendulum-angle / expert"):
        assert find_runs(tmp_path)[("pendulum-angle", "expert")] == tmp_path / "b-finished"


# ---- the matrix widened: fit under kill -9, evaluate runs sharing an unbuilt dataset ----------

def python_job(tmp_path, name: str, code: str, *args, **popen) -> subprocess.Popen:
    """A Python process running ``code`` (with this repository importable) on ``args``."""
    script = tmp_path / f"{name}.py"
    script.write_text(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n" + code)
    return subprocess.Popen([sys.executable, str(script), *map(str, args)], **popen)


def test_fit_killed_then_resumed_equals_an_uninterrupted_run(pendulum, tmp_path):
    """kill -9 after a checkpoint, resume=True: the same metric rows, bit for bit (but the timings)."""
    fit = dict(FIT, method="favor", steps=200, log_every=20, checkpoint_every=20, n_initial=2)
    out = tmp_path / "killed"
    proc = python_job(tmp_path, "job", f"import resolvent\nfrom resolvent.algorithms.onestep import OneStepConfig\n"
                      f"from tests.test_reliability_cli import controller\n"
                      f"resolvent.fit('tests/reliab-pendulum-v0', controller, out=sys.argv[1], **{fit!r})\n", out,
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ckpt = out / "checkpoints" / "favor.ckpt"
    while not ckpt.exists() and proc.poll() is None:
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert proc.returncode == -9                                          # killed mid-run
    resolvent.fit(pendulum, controller, out=out, resume=True, **fit)
    resolvent.fit(pendulum, controller, out=tmp_path / "full", **fit)
    rows = lambda p: [{k: v for k, v in r.items() if k != "seconds"} for r in RunDir(p).read_metrics()]  # noqa: E731
    assert rows(out) == rows(tmp_path / "full") and rows(out)[-1]["step"] == 200
    params = lambda p: (p / "models" / "favor.params").read_bytes()  # noqa: E731
    assert params(out) == params(tmp_path / "full")


@pytest.mark.slow
def test_concurrent_evaluate_runs_needing_one_unbuilt_dataset(tmp_path):
    """Two evaluate runs at once on a dataset not built yet: one builds it, the other waits; both finish.
    (Slow: two processes, a 20k-transition dataset; the lock itself is checked fast by the `dataset` test.)"""
    env = {**os.environ, "MINARI_DATASETS_PATH": str(tmp_path / "minari")}
    tiny = dict(steps=20, log_every=10, checkpoint_every=10, seeds=1, m=16, n_initial=2, n_train_rewards=2,
                n_test_rewards=2, hidden=(16,), features=8, gt_tol=1e-2, methods=("attention",),
                dataset="medium", data_seed=4)
    code = (f"from resolvent.experiments import EvaluateConfig, run_evaluate\n"
            f"run_evaluate(EvaluateConfig(**{tiny!r}), sys.argv[1], plot=False)\n")
    procs = [python_job(tmp_path, f"job{i}", code, tmp_path / f"r{i}", env=env, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True) for i in range(2)]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    for p, err in zip(procs, errs):
        assert p.returncode == 0, err[-2000:]
    assert any("waiting for another process making the dataset" in e for e in errs)
    rows = [[r["test_mse"] for r in RunDir(tmp_path / f"r{i}").read_metrics()] for i in range(2)]
    assert rows[0] == rows[1]                                              # the same dataset, the same run
