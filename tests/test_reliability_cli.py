"""Issue 19's cases, each reproduced: nothing saved is lost (the shipped policy, a dataset another
process built), user code that raises gives one clear error naming it, and options that were
ignored or silently wrong are refused, by name, before anything is trained or written."""
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import minari
import numpy as np
import pytest
from click.testing import CliRunner
from minari.data_collector import EpisodeBuffer

import resolvent
from resolvent.cli import main
from resolvent.policies.td3 import shipped_dir

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--seeds", "1", "--steps", "20", "--log-every", "10", "--checkpoint-every", "10", "--m", "16"]
FIT = dict(steps=20, seeds=1, log_every=10, checkpoint_every=10, m=16, n_initial=4, gt_tol=1e-2,
           sf_fit_points=64, hidden=(16,), features=8, plot=False)


def tree_hash(path: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.iterdir()) if p.is_file()}


def snapshot(path: Path) -> dict:
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def controller(obs):
    """A Pendulum-v1 target policy: torque against the angular velocity."""
    return np.clip(-2.0 * np.asarray(obs)[:, 2:3], -2.0, 2.0).astype(np.float32)


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
    ("def policy(o):\n    raise ValueError('no')\n", ("the policy", "failed on dataset observations", "no")),
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
