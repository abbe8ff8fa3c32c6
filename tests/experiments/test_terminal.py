"""A terminating dataset of one's own with its environment's termination rule (MountainCar): the
rule, the registered one by default, named on the command line or given to ``resolvent.fit``,
goes into the run's one-step model, which is fitted split, and ``resolvent.load`` gives it back
with the saved model (a rule named MODULE:ATTR; one given in Python is asked for again)."""
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
from resolvent.algorithms.onestep import RuleRef
from resolvent.experiments.sources import config_terminal, family_source

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


def evaluate(tmp_path, name, *terminal):
    run = tmp_path / name
    res = CliRunner().invoke(main, ["evaluate", "--data", mountaincar.DATASET_ID, "--policy",
                                    "examples/mountaincar.py:policy", *terminal, "--methods", "fb", *TINY,
                                    "--out", str(run)])
    assert res.exit_code == 0, res.output
    return run


@pytest.mark.parametrize("terminal, ref", [((), "resolvent.endings:mountaincar"),
                                           (("--terminal", "examples/mountaincar.py:terminal"),
                                            "examples/mountaincar.py:terminal"),
                                           (("--terminal", "none"), None)])
def test_the_rule_from_the_command_line_and_back_with_the_model(dataset, tmp_path, terminal, ref):
    run = evaluate(tmp_path, "r", *terminal)
    model = resolvent.load(run, "fb+k3")
    obs = np.array([[0.44, 0.05], [-0.5, 0.0]], np.float32)
    e = model.expansion(obs, mountaincar.policy(obs), 3)
    if ref is None:
        assert not model.onestep.split and model.onestep.terminal is None
        return
    assert model.onestep.split and isinstance(model.onestep.terminal, RuleRef) and model.onestep.terminal.ref == ref
    q = model.q_values(goal, obs, mountaincar.policy(obs))
    assert q.shape == (2,) and np.all(np.isfinite(q))
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
    assert json.loads((tmp_path / "p" / "config.json").read_text())["terminal"] == "callable"
    with pytest.raises(ValueError, match="callable given to resolvent.fit, which a run does not save: give it again"):
        resolvent.fit(dataset, mountaincar.policy, out=tmp_path / "p", resume=True, plot=False)
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
    assert not (tmp_path / "a" / "models").exists()          # named before any training
    assert family_source(EvaluateConfig(family="pendulum-angle", n_initial=2, eval_points=("reset",),
                                        gt_tol=1e-2)).terminal is None     # auto: none for a family
    with pytest.raises(ValueError, match="no transition of the dataset terminates"):   # Pendulum never ends
        family_source(EvaluateConfig(family="pendulum-angle", n_initial=2, eval_points=("reset",), gt_tol=1e-2,
                                     terminal="resolvent.endings:mountaincar"))
    with pytest.raises(ValueError, match="terminal must be auto, none, callable or a rule's MODULE:ATTR"):
        EvaluateConfig(family=None, data=mountaincar.DATASET_ID, policy="examples/mountaincar.py:policy",
                       terminal="yes")
    with pytest.raises(ValueError, match="callable given to resolvent.fit"):
        config_terminal("callable", mountaincar.ENV_ID, {})
    with pytest.warns(UserWarning, match="disagrees with the dataset's `terminated` flag"):
        resolvent.fit(dataset, mountaincar.policy, out=tmp_path / "b", method="fb", plot=False,
                      terminal=lambda f: (f["next_obs"][:, 0] >= 0.3).astype(np.float32),
                      onestep=OneStepConfig(hidden=(16,), steps=20), horizons=(3,), steps=20, seeds=1, log_every=20,
                      checkpoint_every=20, m=16, n_initial=4, eval_points=("reset",), gt_tol=1e-2, trust="off",
                      stretches=0)


def raising(f):
    raise RuntimeError("no rule here")


def test_a_named_rule_that_fails_is_named_before_training():
    data = {"obs": np.zeros((4, 2), np.float32), "action": np.zeros((4, 1), np.float32),
            "next_obs": np.zeros((4, 2), np.float32), "terminated": np.array([0, 0, 0, 1], np.float32)}
    with pytest.raises(ValueError, match="termination rule failed on the dataset's transitions: RuntimeError: no rule"):
        config_terminal(f"{__file__}:raising", mountaincar.ENV_ID, data)
    with pytest.raises(ValueError, match=r"termination rule returned shape \(2, 2\)"):
        config_terminal(f"{__file__}:goal_wide", mountaincar.ENV_ID, data)


def goal_wide(f):
    return f["next_obs"] >= 0.45


def test_the_registered_rule_only_where_the_data_agrees():
    rng = np.random.default_rng(0)
    nxt = rng.uniform([-1.2, -0.07], [0.6, 0.07], (200, 2)).astype(np.float32)
    data = {"obs": nxt, "action": np.zeros((200, 1), np.float32), "next_obs": nxt,
            "terminated": ((nxt[:, 0] >= 0.45) & (nxt[:, 1] >= 0)).astype(np.float32)}
    rule = config_terminal("auto", mountaincar.ENV_ID, data)
    assert rule.ref == "resolvent.endings:mountaincar"
    with pytest.warns(UserWarning, match="no termination rule is known for Unknown-v0 environment"):
        assert config_terminal("auto", "Unknown-v0", data) is None                     # none registered
    assert config_terminal("auto", mountaincar.ENV_ID, {**data, "terminated": 0 * data["terminated"]}) is None
    with pytest.warns(UserWarning, match=r"MountainCarContinuous-v0's termination rule .* disagrees .* not used"):
        assert config_terminal("auto", mountaincar.ENV_ID, {**data, "terminated": 1 - data["terminated"]}) is None
    assert config_terminal("none", mountaincar.ENV_ID, data) is None
