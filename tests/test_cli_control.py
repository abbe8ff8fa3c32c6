"""End-to-end runs of the control commands: optimize, rollout, plot."""
import json

import pytest
from click.testing import CliRunner

from resolvent.cli import main

TINY = ["--steps", "10", "--eval-every", "10", "--checkpoint-every", "10", "--seeds", "1",
        "--m", "16", "--episodes", "1", "--n-actions", "5"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "opt"
    res = CliRunner().invoke(main, ["optimize", "pendulum-angle", "--dataset", "expert",
                                    "--methods", "maxout,vanilla", *TINY, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "TD3 target" in res.output and "original reward" in res.output
    return out


def test_optimize_outputs(run_dir):
    res = json.loads((run_dir / "results.json").read_text())
    assert res["task"] == "optimize" and set(res["methods"]) == {"maxout", "vanilla"}
    assert "target_return" in res and (run_dir / "returns.png").exists()
    assert json.loads((run_dir / "config.json").read_text())["n_actions"] == 5


def test_rollout_prints_returns(run_dir):
    res = CliRunner().invoke(main, ["rollout", str(run_dir), "--theta0", "0.5", "--episodes", "2"])
    assert res.exit_code == 0, res.output
    assert "returns:" in res.output and "mean" in res.output and "TD3 target policy" in res.output
    res = CliRunner().invoke(main, ["rollout", str(run_dir), "--method", "vanilla", "--param", "0.1",
                                    "--episodes", "1"])
    assert res.exit_code == 0, res.output


def test_plot_redraws_returns(run_dir):
    res = CliRunner().invoke(main, ["plot", str(run_dir)])
    assert res.exit_code == 0 and "returns.png" in res.output


def test_bad_input_gets_one_clear_error(run_dir, tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["optimize", "pendulum-angle", "--methods", "sf", *TINY,
                               "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "unknown method 'sf' for optimize" in res.output
    res = runner.invoke(main, ["optimize", "--resume"])
    assert res.exit_code == 2 and "--resume needs --out" in res.output
    res = runner.invoke(main, ["rollout", str(run_dir), "--v-target", "1.0"])
    assert res.exit_code == 2 and "not a parameter of pendulum-angle" in res.output
    res = runner.invoke(main, ["rollout", str(run_dir), "--method", "linear", "--theta0", "0"])
    assert res.exit_code == 2 and "no trained 'linear' model" in res.output
    res = runner.invoke(main, ["rollout", str(run_dir), "--theta0", "0", "--seed", "3"])
    assert res.exit_code == 2 and "seed index 3" in res.output


def test_baselines_train_each_test_reward_alone_offline(run_dir, tmp_path):
    res = CliRunner().invoke(main, ["baselines", str(run_dir), "--kinds", "offline",
                                    "--methods", "vanilla", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "baselines.json").read_text())
    assert len(summary["rewards"]) == 3
    for entry in summary["rewards"].values():
        assert {"zero-shot maxout", "zero-shot vanilla", "offline vanilla (this reward only)",
                "TD3 target policy (original reward)"} == set(entry)
    subs = sorted(tmp_path.glob("offline-theta0=*"))
    assert len(subs) == 3
    sub = json.loads((subs[0] / "config.json").read_text())
    assert len(sub["train_params"]) == 1 and sub["methods"] == ["vanilla"]
    refresh = CliRunner().invoke(main, ["baselines", str(run_dir), "--kinds", "", "--out", str(tmp_path)])
    assert refresh.exit_code == 0, refresh.output   # trains nothing, keeps what was trained
    assert json.loads((tmp_path / "baselines.json").read_text())["rewards"] == summary["rewards"]
    bad = CliRunner().invoke(main, ["baselines", str(run_dir), "--kinds", "sac", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "unknown baseline kind 'sac'" in bad.output
    res = CliRunner().invoke(main, ["figure", "transfer", "--runs", str(tmp_path), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "transfer.png").stat().st_size > 0
    empty = CliRunner().invoke(main, ["figure", "transfer", "--runs", str(tmp_path / "b"), "--out", str(tmp_path)])
    assert empty.exit_code == 2 and "no baselines.json" in empty.output


@pytest.mark.slow
def test_baselines_td3_online(run_dir, tmp_path):
    pytest.importorskip("sbx")
    res = CliRunner().invoke(main, ["baselines", str(run_dir), "--kinds", "td3", "--td3-steps", "300",
                                    "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "baselines.json").read_text())
    assert all("td3 online (this reward only)" in e for e in summary["rewards"].values())


def test_figure_opi_draws_from_finished_runs(run_dir, tmp_path):
    res = CliRunner().invoke(main, ["figure", "opi", "--runs", str(run_dir.parent), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "opi.png").stat().st_size > 0


def test_q_on_an_optimize_run_and_bad_parameters(run_dir):
    res = CliRunner().invoke(main, ["q", str(run_dir), "--method", "maxout", "--theta0", "0.3", "--points", "2"])
    assert res.exit_code == 0, res.output
    assert "gap to the TD3 target policy's Q over all 64" in res.output and "not an error" in res.output
    for bad in ("nan", "inf"):
        res = CliRunner().invoke(main, ["q", str(run_dir), "--method", "maxout", "--theta0", bad])
        assert res.exit_code == 2 and "must be finite" in res.output and "Traceback" not in res.output


def test_resume_refuses_options_it_would_ignore(run_dir):
    before = (run_dir / "metrics.jsonl").read_text()
    res = CliRunner().invoke(main, ["optimize", "--out", str(run_dir), "--resume", "--steps", "50"])
    assert res.exit_code == 2 and "drop --steps" in res.output
    assert (run_dir / "metrics.jsonl").read_text() == before
