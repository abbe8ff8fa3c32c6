"""calibrate: a few true rollouts, where the candidates disagree most (answered by their truth) and at random."""
import dataclasses
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import resolvent
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.evaluation.support import SupportConfig
from resolvent.cli import main
from resolvent.experiments import EvaluateConfig, run_evaluate
from resolvent.experiments.calibrate import (calibrate, choose, disagreement, labelled_points, run_candidates,
                                             simulator_truth)
from resolvent.experiments.sources import answered_rewards, family_source
from resolvent.model import load_support, save_support

TINY = dict(horizons=(3,), steps=40, log_every=20, checkpoint_every=20, seeds=2, m=16, n_initial=4,
            n_train_rewards=8, n_test_rewards=4, hidden=(16,), features=8, gt_tol=1e-3, n_points=6,
            methods=("favor", "fb", "sf"), n_refs=16, ref_pool=200, random_features=16, sf_fit_points=256,
            onestep=OneStepConfig(hidden=(16,), steps=20), support=SupportConfig(dynamics=True))


def test_disagreement_is_where_the_candidates_differ_in_each_rewards_units():
    truth = np.array([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 6.0, 6.0, 7.0]])      # (R, n)
    answers = np.stack([truth, truth + 1.0, truth.copy()])                          # (C, R, n)
    answers[2, :, 3] += 10.0                                                        # candidate 2 off at point 3
    d = disagreement(answers)
    assert d.shape == (5,) and np.argmax(d) == 3
    scaled = answers.copy()
    scaled[:, 1] *= 100.0                                                           # a reward in other units
    np.testing.assert_allclose(disagreement(scaled), d, rtol=1e-9)
    np.testing.assert_array_equal(disagreement(np.ones((3, 2, 5))), np.zeros(5))   # all agree
    exact, at_random = labelled_points(answers, 3, seed=4)
    assert list(exact) == [3] and len(at_random) == 2 and 3 not in at_random        # m // 2 where they disagree
    np.testing.assert_array_equal(labelled_points(answers, 3, seed=4)[1], at_random)  # the same seed, the same
    assert len(labelled_points(answers, 1)[0]) == 0 and len(labelled_points(answers, 1)[1]) == 1
    np.testing.assert_array_equal(np.sort(np.concatenate(labelled_points(answers, 5))), np.arange(5))


def test_each_reward_gets_the_candidate_closest_to_the_truth_at_the_labelled_points():
    truth = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])                            # (R, n)
    answers = np.stack([truth + [[0.0, 0.0, 5.0], [0.0, 2.0, 0.0]],                 # right at 0, 1 for reward 0
                        truth + [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])                # right everywhere for reward 1
    picked, errors = choose(answers, truth[:, [0, 1]], np.array([0, 1]))
    np.testing.assert_array_equal(picked, [0, 1])
    np.testing.assert_allclose(errors, [[0.0, 2.0], [1.0, 0.0]])
    picked, _ = choose(answers, truth[:, [2]], np.array([2]))                     # point 2 decides otherwise
    np.testing.assert_array_equal(picked, [1, 0])


def test_ties_go_to_the_preferred_candidate_as_auto_s_to_the_longest_horizon():
    """Expansions whose rollouts all ended before their horizon give one answer at those points:
    the tie goes to the highest ``prefer`` (calibrate: the longest horizon), not to the first."""
    truth = np.array([[1.0, 2.0, 3.0]])                                             # (R, n)
    answers = np.stack([truth + [[0.0, 0.0, 9.0]], truth + [[0.0, 0.0, 1.0]], truth + [[0.5, 0.0, 0.0]]])
    assert choose(answers, truth[:, :2], np.arange(2))[0][0] == 0                     # tied: the first
    assert choose(answers, truth[:, :2], np.arange(2), prefer=[10, 400, 1000])[0][0] == 1
    assert choose(answers, truth[:, 2:], np.array([2]), prefer=[10, 400, 1000])[0][0] == 2   # no tie: the best


@pytest.mark.parametrize("m", [0, 7, 2.5, True])
def test_bad_numbers_of_points(m):
    with pytest.raises(ValueError, match="m, the points rolled out"):
        labelled_points(np.zeros((2, 1, 6)), m)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("calibrate") / "run"
    cfg = EvaluateConfig(**TINY)
    run_evaluate(cfg, out, plot=False)
    return out, family_source(cfg)


def test_calibrate_rolls_out_the_simulator_where_the_candidates_disagree(tiny_run):
    """On a tiny Pendulum-Angle run: the truth at the rolled-out points is the evaluation's own
    Monte-Carlo truth there (the same simulator, restore and policy); every reward is answered by
    that truth there and by its chosen candidate elsewhere, the candidate closest to the truth at
    the random half."""
    run, src = tiny_run
    gt = src.points["dataset"]
    rewards = dict(src.rewards["test"])
    c = calibrate(run, rewards, gt.obs0, gt.action0, m=4)
    assert c.candidates == run_candidates(run) and {"favor", "fb", "favor+k3", "fb+k3"} <= set(c.candidates)
    assert c.answers.shape == (len(c.candidates), len(rewards), len(gt.obs0))
    np.testing.assert_array_equal(c.labelled, np.concatenate(labelled_points(c.answers, 4)))
    np.testing.assert_array_equal(c.support.relative,                             # the run's check, pi's actions
                                  resolvent.load(run, "favor").check_support(gt.obs0).relative)
    ref = np.stack([gt.q(r) for r in rewards.values()])                           # (R, n)
    np.testing.assert_allclose(c.truth, ref[:, c.labelled], rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(c.q[:, c.labelled], c.truth)
    elsewhere = np.setdiff1d(np.arange(len(gt.obs0)), c.labelled)
    for r in range(len(rewards)):
        chosen = c.candidates.index(c.chosen[r])
        assert c.errors[chosen, r] == c.errors[:, r].min()
        np.testing.assert_array_equal(c.q[r, elsewhere], c.answers[chosen, r, elsewhere])
    given = calibrate(run, rewards, gt.obs0, gt.action0, m=3, candidates=("favor", "fb+k3"),
                      truth=lambda rw, o, a: np.zeros((len(rw), len(o))))          # any source of true returns
    assert given.candidates == ("favor", "fb+k3") and not given.truth.any()
    fixed = calibrate(run, rewards, gt.obs0, gt.action0, m=3, candidates=("sf", "sf+k3"))   # sf is saved without
    np.testing.assert_allclose(fixed.answers, c.answers[[c.candidates.index(k) for k in ("sf", "sf+k3")]],
                               rtol=1e-5)                     # the one-step model: loaded with the run's


def test_calibrate_rejects_bad_input_by_name(tiny_run, tmp_path):
    run, src = tiny_run
    gt = src.points["dataset"]
    rewards = dict(src.rewards["test"][:1])
    with pytest.raises(ValueError, match="one row per point"):
        calibrate(run, rewards, gt.obs0, gt.action0[:3])
    with pytest.raises(ValueError, match="m, the points rolled out"):
        calibrate(run, rewards, gt.obs0, gt.action0, m=100)
    with pytest.raises(ValueError, match="at least one reward"):
        calibrate(run, {}, gt.obs0, gt.action0)
    with pytest.raises(ValueError, match="is not a reward"):
        calibrate(run, {"r": 3}, gt.obs0, gt.action0)
    with pytest.raises(ValueError, match="the truth must be finite"):
        calibrate(run, rewards, gt.obs0, gt.action0, m=2, truth=lambda rw, o, a: np.zeros(3))
    with pytest.raises(ValueError, match="the reward 'bad' failed on the calibration rollouts: KeyError"):
        simulator_truth(run)({"bad": lambda f: f["nope"]}, gt.obs0[:2], gt.action0[:2])
    with pytest.raises(ValueError, match="no finished run"):
        calibrate(tmp_path, rewards, gt.obs0, gt.action0)


def test_the_command_line_calibrates_a_family_run(tiny_run, tmp_path):
    """``resolvent calibrate RUN``: the family's test rewards at the run's dataset points by
    default, the same choice as the Python call; points and rewards of one's own by file."""
    run, src = tiny_run
    out = tmp_path / "answers.npz"
    res = CliRunner().invoke(main, ["calibrate", str(run), "-m", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    gt = src.points["dataset"]
    rewards = dict(pair for named in answered_rewards(src).values() for pair in named)   # test rewards, probes
    assert len(rewards) == len(src.rewards["test"]) + len(src.rewards["probe"])
    c = calibrate(run, rewards, gt.obs0, gt.action0, m=3)   # the same seed, the same points
    with np.load(out) as z:
        np.testing.assert_allclose(z["q"], c.q, rtol=1e-5)
        assert tuple(z["chosen"]) == c.chosen and list(z["labelled"]) == list(c.labelled)
        np.testing.assert_allclose(z["support"], c.support.relative)
    assert "pi rolled out from 3 of them" in res.output
    points, rewards = tmp_path / "points.npz", tmp_path / "rewards.py"
    np.savez(points, observations=gt.obs0[:4], actions=gt.action0[:4])
    rewards.write_text("import jax.numpy as jnp\nR = {'effort': lambda f: -jnp.sum(f['action'] ** 2, axis=-1)}\n")
    res = CliRunner().invoke(main, ["calibrate", str(run), "--at", str(points), "--rewards", f"{rewards}:R", "-m", "2"])
    assert res.exit_code == 0, res.output
    assert "effort" in res.output
    bad = CliRunner().invoke(main, ["calibrate", str(run), "--rewards", f"{rewards}:NOPE"])
    assert bad.exit_code == 2 and "has no attribute 'NOPE'" in bad.output


def test_calibrate_names_the_points_the_support_check_marks(tiny_run, tmp_path):
    """A copy of the run whose saved check holds the data's actions moved by 10 (pi's action far
    from every one at every point): calibrate reports every point unsupported and how many of them
    it rolled out, placing its rollouts as before (by disagreement, then at random)."""
    run, src = tiny_run
    far = tmp_path / "run"
    shutil.copytree(run, far)
    support = load_support(far / "models")
    assert support.dynamics                                      # the run's switch, saved with its check
    save_support(dataclasses.replace(support, actions=support.actions + 10.0, dynamics=False), far / "models")
    gt = src.points["dataset"]
    rewards = dict(src.rewards["test"][:1])
    c, before = (calibrate(r, rewards, gt.obs0, gt.action0, m=3) for r in (far, run))
    assert c.support.unsupported.all() and not before.support.unsupported.any()
    np.testing.assert_array_equal(c.labelled, before.labelled)
    res = CliRunner().invoke(main, ["calibrate", str(far), "-m", "3"])
    assert res.exit_code == 0, res.output
    n = len(gt.obs0)
    assert f"support: {n} of {n} points" in res.output
    assert (f"3 of them rolled out (answered by their truth), the answers at the other {n - 3} the least trusted"
            in res.output)
    quiet = CliRunner().invoke(main, ["calibrate", str(run), "-m", "3"])
    assert quiet.exit_code == 0 and "support:" not in quiet.output                  # none marked: no line
