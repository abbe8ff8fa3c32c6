"""A terminating dataset of one's own with its environment's termination rule (MountainCar): the
rule goes from the command line or ``resolvent.fit`` into the run's one-step model, which is
fitted split, and ``resolvent.load`` gives it back from the run's configuration."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import resolvent
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.cli import main
from resolvent.experiments.evaluate import EvaluateConfig
from resolvent.model import RunRule

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples import mountaincar  # noqa: E402

TINY = ["--steps", "20", "--log-every", "20", "--seeds", "1", "--m", "16", "--n-initial", "4", "--eval-points",
        "reset", "--gt-tol", "1e-2", "--onestep.hidden", "16", "--onestep.steps", "20", "--horizons", "3",
        "--trust", "off", "--stretches", "0"]


@pytest.fixture(scope="module")
def dataset():
    ds = mountaincar.build(size=1500, rebuild=True)
    assert any(ep.terminations.any() for ep in ds.iterate_episodes())   # the goal is reached in it
    return ds


def goal(f):
    return (f["next_obs"][:, 0] >= 0.45).astype(np.float32)


def test_the_rule_from_the_command_line_and_back_from_the_run(dataset, tmp_path):
    run = tmp_path / "r"
    res = CliRunner().invoke(main, ["evaluate", "--data", mountaincar.DATASET_ID, "--policy",
                                    "examples/mountaincar.py:policy", "--terminal", "examples/mountaincar.py:terminal",
                                    "--methods", "fb", *TINY, "--out", str(run)])
    assert res.exit_code == 0, res.output
    assert json.loads((run / "config.json").read_text())["terminal"] == "examples/mountaincar.py:terminal"
    model = resolvent.load(run, "fb+k3")
    assert model.onestep.split and isinstance(model.onestep.terminal, RunRule)
    obs = np.array([[0.44, 0.05], [-0.5, 0.0]], np.float32)
    q = model.q_values(goal, obs, mountaincar.policy(obs))
    assert q.shape == (2,) and np.all(np.isfinite(q))
    e = model.expansion(obs, mountaincar.policy(obs), 3)
    assert set(np.unique(e.steps["terminated"])) <= {0.0, 1.0}   # the rule's, never a share


def test_the_rule_from_python(dataset, tmp_path):
    calls = []

    def rule(f):
        calls.append(len(f["next_obs"]))
        return mountaincar.terminal(f)

    model = resolvent.fit(dataset, mountaincar.policy, out=tmp_path / "p", method="fb", terminal=rule, plot=False,
                          onestep=OneStepConfig(hidden=(16,), steps=20), horizons=(3,), steps=20, seeds=1,
                          log_every=20, checkpoint_every=20, m=16, n_initial=4, eval_points=("reset",),
                          gt_tol=1e-2, trust="off", stretches=0)
    assert model.onestep.split and model.onestep.terminal is rule and calls
    assert json.loads((tmp_path / "p" / "config.json").read_text())["terminal"] is None
    again = resolvent.load(tmp_path / "p", "fb+k3")       # a rule given in Python is not saved: named when needed
    again.target_policy = mountaincar.policy
    obs = np.array([[-0.5, 0.0]], np.float32)
    with pytest.raises(ValueError, match="fitted for a termination rule, and none is set"):
        again.q_values(goal, obs, mountaincar.policy(obs))


def test_bad_rules(dataset, tmp_path):
    res = CliRunner().invoke(main, ["evaluate", "--data", mountaincar.DATASET_ID, "--policy",
                                    "examples/mountaincar.py:policy", "--terminal", "examples/mountaincar.py:nothing",
                                    "--methods", "fb", *TINY, "--out", str(tmp_path / "a")])
    assert res.exit_code != 0 and "has no attribute 'nothing' (the termination rule)" in res.output
    with pytest.raises(ValueError, match="go with a dataset of one's own"):
        EvaluateConfig(family="pendulum-angle", terminal="examples/mountaincar.py:terminal")
    with pytest.warns(UserWarning, match="disagrees with the dataset's `terminated` flag"):
        resolvent.fit(dataset, mountaincar.policy, out=tmp_path / "b", method="fb", plot=False,
                      terminal=lambda f: (f["next_obs"][:, 0] >= 0.3).astype(np.float32),
                      onestep=OneStepConfig(hidden=(16,), steps=20), horizons=(3,), steps=20, seeds=1, log_every=20,
                      checkpoint_every=20, m=16, n_initial=4, eval_points=("reset",), gt_tol=1e-2, trust="off",
                      stretches=0)
