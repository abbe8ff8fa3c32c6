import json
import shutil

import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest
from click.testing import CliRunner

import resolvent
from resolvent.cli import main, results_table, support_note
from resolvent.evaluation.support import ActionSupport

TINY = ["--steps", "20", "--log-every", "10", "--checkpoint-every", "10", "--seeds", "1", "--m", "16"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run"
    res = CliRunner().invoke(main, ["evaluate", "pendulum-angle", "--dataset", "medium",
                                    "--methods", "attention,linear,vanilla,sf", *TINY, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "attention" in res.output and "test mse" in res.output and "probe r2" in res.output
    method, why = resolvent.default_method(out)   # and how to ask it any reward, by which answer and why
    assert f"any reward, zero-shot: resolvent q {out} --reward" in res.output and f"by {method}, {why}" in res.output
    return out


def test_evaluate_outputs(run_dir):
    res = json.loads((run_dir / "results.json").read_text())
    assert res["dataset"] == "medium" and set(res["methods"]) == {"attention", "linear", "vanilla", "sf"}
    assert (run_dir / "mse.png").exists() and (run_dir / "metrics.jsonl").exists()


def test_resume_a_finished_run_is_a_no_op(run_dir):
    before = (run_dir / "metrics.jsonl").read_text()
    res = CliRunner().invoke(main, ["evaluate", "--out", str(run_dir), "--resume"])
    assert res.exit_code == 0, res.output
    assert (run_dir / "metrics.jsonl").read_text() == before


def test_q_prints_predictions_and_truth(run_dir):
    res = CliRunner().invoke(main, ["q", str(run_dir), "--theta0", "0.7", "--points", "3"])
    assert res.exit_code == 0, res.output
    assert "Monte-Carlo truth" in res.output and "MSE over all 64" in res.output
    bad = CliRunner().invoke(main, ["q", str(run_dir), "--v-target", "1.0"])
    assert bad.exit_code == 2 and "not a parameter of pendulum-angle" in bad.output


def test_q_for_any_reward_at_points_of_ones_own(run_dir, tmp_path):
    """``q --reward FILE.py:ATTR``: any reward callable, scored against the Monte-Carlo truth at the
    initial points (a family member written in a file answers as its parameter does); ``--at``
    points of one's own, ``--out`` the answers; bad references, points and rewards are named."""
    rewards = tmp_path / "rewards.py"
    rewards.write_text("import jax.numpy as jnp\nfrom resolvent.families import get_family\n"
                       "member = get_family('pendulum-angle').reward_callable(0.7)\n"
                       "def upright(f):\n    return jnp.cos(jnp.arctan2(f['obs'][:, 1], f['obs'][:, 0]))\n"
                       "def broken(f):\n    raise ZeroDivisionError('a bug of its own')\n")
    runner = CliRunner()
    by_param = runner.invoke(main, ["q", str(run_dir), "--method", "sf", "--theta0", "0.7"])
    by_file = runner.invoke(main, ["q", str(run_dir), "--method", "sf", "--reward", f"{rewards}:member"])
    assert by_file.exit_code == 0, by_file.output
    assert by_file.output.splitlines()[1:] == by_param.output.splitlines()[1:]     # the same numbers
    rng = np.random.default_rng(0)
    obs, act = rng.normal(size=(5, 3)).astype(np.float32), rng.uniform(-2, 2, (5, 1)).astype(np.float32)
    np.savez(tmp_path / "points.npz", observations=obs, actions=act)
    res = runner.invoke(main, ["q", str(run_dir), "--reward", f"{rewards}:upright", "--at",
                               str(tmp_path / "points.npz"), "--out", str(tmp_path / "q.npz"), "--points", "2"])
    assert res.exit_code == 0, res.output
    default, why = resolvent.default_method(run_dir)                  # the run's most accurate against its truth
    assert f"method {default} " in res.output and why in res.output and "Q over all 5 points" in res.output
    upright = lambda f: jnp.cos(jnp.arctan2(f["obs"][:, 1], f["obs"][:, 0]))  # noqa: E731 - as in the file
    with np.load(tmp_path / "q.npz") as z:
        want = resolvent.load(run_dir).q_values(upright, obs, act, seed=None)
        np.testing.assert_allclose(z["q_seeds"], want, rtol=1e-6)
        np.testing.assert_allclose(z["q"], want.mean(0), rtol=1e-6)
    np.savez(tmp_path / "wide.npz", observations=np.zeros((5, 4)), actions=act)
    np.savez(tmp_path / "keys.npz", obs=obs, actions=act)
    for args, said in (([f"{rewards}:member", "--theta0", "0.7"], "not both"),
                       ([f"{rewards}:nothing"], "has no attribute 'nothing'"),
                       ([f"{rewards}:broken"], "ZeroDivisionError: a bug of its own"),
                       ([f"{rewards}:upright", "--at", str(tmp_path / "wide.npz")], "the run's have 3 and 1"),
                       ([f"{rewards}:upright", "--at", str(tmp_path / "keys.npz")], "must hold arrays 'observations'")):
        bad = runner.invoke(main, ["q", str(run_dir), "--reward", *args])
        assert bad.exit_code == 2 and said in bad.output, (args, bad.output)


def test_the_action_support_check_marks_points_pi_takes_unseen_actions_at(run_dir, tmp_path):
    """Every run saves the data's action-support check; results.json holds it at each kind of
    points, the evaluate table counts them, ``q`` marks them and writes them with ``--out``, the
    Python model answers the same; a run made before it answers without the column."""
    full = json.loads((run_dir / "results.json").read_text())
    res = full["support"]
    counts = f"reset {len(res['kinds']['reset']['unsupported'])}/64"
    assert "action support" in results_table(full) and counts in results_table(full)
    assert set(res["kinds"]) >= {"reset", "trajectory", "dataset"} and res["threshold"] > 0
    assert len(res["kinds"]["reset"]["relative"]) == 64
    model = resolvent.load(run_dir)
    support = model.support
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    np.testing.assert_allclose(model.check_support(obs).relative,
                               support.check(obs, model.target_policy(obs)).relative, rtol=1e-6)
    # a point whose pi action the data never took near it: far outside the data's actions
    far = support.check(obs, np.full((2, 1), 50.0, np.float32))
    assert far.unsupported.all() and "2 of 2 points (0, 1)" in far.summary()
    out = tmp_path / "q.npz"
    shown = CliRunner().invoke(main, ["q", str(run_dir), "--theta0", "0.7", "--points", "2", "--out", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "support" in shown.output.splitlines()[1] and "support:" in shown.output
    with np.load(out) as z:
        np.testing.assert_allclose(z["support"], res["kinds"]["reset"]["relative"], atol=1e-4)
        assert z["unsupported"].tolist() == [i in res["kinds"]["reset"]["unsupported"] for i in range(64)]
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    (old / "models" / "support.npz").unlink()
    before = CliRunner().invoke(main, ["q", str(old), "--theta0", "0.7", "--points", "2"])
    assert before.exit_code == 0, before.output
    rows = [o.splitlines()[2:4] for o in (before.output, shown.output)]              # i, predicted, truth
    assert "support" not in before.output and [[r.split()[:3] for r in rs] for rs in rows] == [
        [r.split()[:3] for r in rows[1]]] * 2
    with pytest.raises(ValueError, match="has no action-support check"):
        resolvent.load(old).check_support(obs)


def test_dataset_and_target():
    runner = CliRunner()
    res = runner.invoke(main, ["dataset", "pendulum-angle", "--kind", "replay"])
    assert res.exit_code == 0 and "20000 transitions" in res.output
    res = runner.invoke(main, ["target", "pendulum-angle"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["average_return_now"] > -400  # a swing-up policy; random is about -1200


def test_plot(run_dir):
    png = run_dir / "mse.png"
    png.unlink(missing_ok=True)
    res = CliRunner().invoke(main, ["plot", str(run_dir)])
    assert res.exit_code == 0 and "mse.png" in res.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = plt.imread(png)[..., :3]                                      # (h, w, 3) in [0, 1]
    assert pixels.shape[0] > 100 and pixels.shape[1] > 100
    drawn = np.any(pixels < 0.9, axis=-1)                                  # not background
    assert 0.01 < drawn.mean() < 0.9                                       # axes, lines, labels
    assert len(np.unique(pixels.reshape(-1, 3).round(2), axis=0)) > 10     # colours, not one ink


def test_bad_input_gets_one_clear_error(tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["evaluate", "walker", *TINY])
    assert res.exit_code == 2 and "walker" in res.output
    res = runner.invoke(main, ["evaluate", "pendulum-angle", "--methods", "transformer", *TINY,
                               "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "unknown method 'transformer'" in res.output
    res = runner.invoke(main, ["evaluate", "pendulum-angle", "--dataset", "random", *TINY,
                               "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "unknown dataset kind 'random'" in res.output
    res = runner.invoke(main, ["evaluate", "--resume"])
    assert res.exit_code == 2 and "--resume needs --out" in res.output


def test_target_retrain_runs_td3(tmp_path):
    pytest.importorskip("sbx")
    res = CliRunner().invoke(main, ["target", "pendulum-angle", "--retrain", "--steps", "300",
                                    "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "pendulum-angle.npz").exists() and (tmp_path / "pendulum-angle-replay.npz").exists()
    assert json.loads((tmp_path / "pendulum-angle.json").read_text())["td3_steps"] == 300


def test_figure_ope_draws_from_finished_runs(run_dir, tmp_path):
    res = CliRunner().invoke(main, ["figure", "ope", "--runs", str(run_dir.parent), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "ope.png").stat().st_size > 0
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(main, ["figure", "ope", "--runs", str(empty), "--out", str(tmp_path)])
    assert res.exit_code != 0 and "no finished evaluate runs" in res.output


def test_preset_and_prior_options(tmp_path):
    runner = CliRunner()
    out = tmp_path / "paper"
    res = runner.invoke(main, ["evaluate", "--preset", "paper", "--methods", "attention,fqe", *TINY,
                               "--out", str(out)])
    assert res.exit_code == 0, res.output
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["fqe"]["tau"] == 0.005 and cfg["fqe"]["prior"]["kind"] == "family"
    assert "fqe" in json.loads((out / "results.json").read_text())["methods"]
    out = tmp_path / "generic"
    res = runner.invoke(main, ["evaluate", "--reward-prior", "generic", "--prior-rewards", "7",
                               "--tau", "0.1", "--ref-actions", "half-policy", "--methods", "attention",
                               *TINY, "--out", str(out)])
    assert res.exit_code == 0, res.output
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["fqe"]["prior"] == {**cfg["fqe"]["prior"], "kind": "generic", "n_generic": 7}
    assert cfg["fqe"]["tau"] == 0.1 and cfg["ref_actions"] == "half-policy"
    assert (out / "prior.npz").is_file()
    for bad, msg in ((["--prior-rewards", "0"], "n_generic (generic rewards per step) must be >= 1"),
                     (["--reward-prior", "gaussian"], "gaussian"),
                     (["--methods", "attention,attention"], "methods listed twice"),
                     (["--steps", "25"], "must be a multiple of log_every")):
        res = runner.invoke(main, ["evaluate", *TINY, *bad, "--out", str(tmp_path / "bad")])
        assert res.exit_code == 2 and msg in res.output, res.output
    assert not (tmp_path / "bad").exists()


def test_the_support_line_says_how_the_marked_points_were_answered(capsys):
    """``resolvent q``'s support line: a marked point's answer is the model's guess at pi's action,
    or, where the run asked for supported dynamics and the answer is an expansion, its rollout at
    the data's nearest actions."""
    states = np.arange(10, dtype=np.float32)[:, None]
    check = ActionSupport(states, states / 10, np.ones(1, np.float32), 0.1, 0.4, 1, 3.0, 0.5).check(
        [[2.0], [2.0]], [[0.2], [0.9]])                                  # the second pi action 0.7 from the data's
    support_note(check)
    assert "1 of 2 points (1)" in capsys.readouterr().out
    support_note(check, steered=True)
    said = capsys.readouterr().out
    assert "at the data's nearest actions where pi's are unsupported (support.dynamics)" in said
