import json
import shutil
from dataclasses import replace
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import resolvent
from resolvent.experiments import EvaluateConfig, RunDir, run_evaluate
from resolvent.experiments.evaluate import distil_targets
from resolvent.experiments.problem import open_run
from resolvent.algorithms.bank import BankConfig
from resolvent.algorithms.distil import DistilConfig
from resolvent.algorithms.expansion import Rollouts, rollout_bytes
from resolvent.algorithms.horizon import choose, find_stretches, member_spread, model_errors, validate
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.model import CheckpointError, load_bank

TINY = dict(steps=20, log_every=10, checkpoint_every=10, seeds=2, m=16, n_initial=4,
            n_train_rewards=8, n_test_rewards=4, hidden=(16,), features=8, gt_tol=1e-3)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    run_evaluate(EvaluateConfig(methods=("attention", "sf"), **TINY), out, plot=False)
    return out


def test_zero_shot_q_values_for_any_reward(run_dir):
    model = resolvent.load(run_dir, method="attention")
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    q_family = model.q_values(model.family_reward(0.7), obs, act)
    cos_theta = lambda f: jnp.cos(jnp.arctan2(f["obs"][:, 1], f["obs"][:, 0]))  # noqa: E731
    q_cos = model.q_values(cos_theta, obs, act)
    assert q_family.shape == q_cos.shape == (2,)
    assert np.all(q_cos <= 1 / (1 - 0.99) + 1e-3) and np.all(q_cos >= -1 / (1 - 0.99) - 1e-3)
    assert model.q_values(cos_theta, obs, act, seed=None).shape == (2, 2)


def test_sf_model_encodes_new_rewards_by_ridge(run_dir):
    """A new reward's SF weights solve the ridge normal equations on the saved basis and fit
    points, (Phi Phi^T / n + lambda I) w = Phi r / n, and its Q is w^T psi(x)."""
    model = resolvent.load(run_dir, method="sf")
    basis = np.asarray(model.basis, np.float64)                                # (d, n)
    d, n = basis.shape
    r_fit = np.asarray(model.fit_features["obs"][:, 2], np.float64) ** 2       # the reward, by hand
    w = np.asarray(model.encode([lambda f: f["obs"][:, 2] ** 2])[0], np.float64)   # (d,)
    lhs = (basis @ basis.T / n + model.ridge * np.eye(d)) @ w
    np.testing.assert_allclose(lhs, basis @ r_fit / n, rtol=1e-3, atol=1e-5 * np.abs(basis @ r_fit / n).max())
    obs = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
    act = np.random.default_rng(1).uniform(-2, 2, size=(3, 1)).astype(np.float32)
    psi = np.asarray(model.q_from_encodings(jnp.eye(d), obs, act)[0], np.float64)  # (b, d) seed 0
    q = model.q_values(lambda f: f["obs"][:, 2] ** 2, obs, act)
    np.testing.assert_allclose(q, psi @ w, rtol=1e-4, atol=1e-4)


def test_save_then_load_gives_identical_q_values(run_dir, tmp_path):
    model = resolvent.load(run_dir, method="attention")
    model.save(tmp_path)
    again = resolvent.OperatorModel.load(tmp_path, "attention")
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    act = np.random.default_rng(1).uniform(-2, 2, size=(5, 1)).astype(np.float32)
    r = model.family_reward(-0.3)
    np.testing.assert_array_equal(model.q_values(r, obs, act, seed=None), again.q_values(r, obs, act, seed=None))


def test_bad_reward_callables(run_dir):
    model = resolvent.load(run_dir, method="attention")
    obs, act = np.zeros((2, 3), np.float32), np.zeros((2, 1), np.float32)
    with pytest.raises(ValueError, match=r"returned shape \(16, 3\) on the reference points \(16 transitions\)"):
        model.q_values(lambda f: f["obs"], obs, act)
    with pytest.raises(ValueError, match="non-finite"):
        model.q_values(lambda f: f["obs"][:, 0] / 0.0 * 0.0, obs, act)
    with pytest.raises(ValueError, match="'x_velocity'"):
        model.q_values(lambda f: f["x_velocity"], obs, act)
    with pytest.raises(ValueError, match=r"observations must have shape \(b, 3\)"):
        model.q_values(model.family_reward(0.0), np.zeros((2, 4)), act)


def test_corrupt_model_file_gets_a_clear_error(run_dir, tmp_path):
    model = resolvent.load(run_dir, method="attention")
    model.save(tmp_path)
    (tmp_path / "attention.params").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        resolvent.OperatorModel.load(tmp_path, "attention")
    with pytest.raises(FileNotFoundError, match="no trained 'linear' model"):
        resolvent.load(run_dir, method="linear")


def test_typed_metadata_round_trip_and_unknown_keys(run_dir, tmp_path):
    """A saved model's architecture is a typed record: it comes back equal, and a key nobody
    knows (a model written by another program) is one clear error naming it."""

    model = resolvent.load(run_dir, method="attention")
    model.save(tmp_path)
    again = resolvent.OperatorModel.load(tmp_path, "attention")
    assert again.arch == model.arch and again.arch.hidden == (16,) and again.control is None
    meta = json.loads((tmp_path / "attention.json").read_text())
    meta["arch"]["dropout"] = 0.1
    (tmp_path / "attention.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"unknown architecture config keys \['dropout'\] in Arch"):
        resolvent.OperatorModel.load(tmp_path, "attention")


def test_a_runs_default_answer(tmp_path):
    """``load(run)`` with no method: auto's choice; else the answer most accurate against the run's
    ground truth (geometric mean of its MSEs over the best's, ties to the longer expansion, then the
    run's order); else the first operator's kauto, else that operator; a corrupt or empty run says so."""
    def run(results: dict | None, methods=("favor", "fb")) -> Path:
        d = tmp_path / str(len(list(tmp_path.iterdir())))
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"methods": list(methods)}))
        if results is not None:
            (d / "results.json").write_text(json.dumps(results))
        return d

    def errors(test, probe):       # a method's entry: per-seed MSEs at the reset and dataset points
        return {"test_mse": [test, test], "data_test_mse": [test / 2] * 2, "probe_mse": [probe] * 2,
                "data_probe_mse": [probe / 2] * 2}

    truth = {"favor": errors(200.0, 50.0), "fb": errors(300.0, 40.0), "favor+k30": errors(1.0, 2.0),
             "favor+k400": errors(0.1, 0.2), "fb+k400": errors(0.1, 0.2), "fb+kauto": errors(0.1, 0.2),
             "fqe": errors(0.01, 0.01)}                      # the oracle is no answer of the run's
    assert resolvent.default_method(run({"methods": truth}))[0] == "favor+k400"   # tied: k400 > kauto, run order
    truth["fb+k400"] = errors(0.09, 0.2)
    assert resolvent.default_method(run({"methods": truth}))[0] == "fb+k400"
    truth["favor+k30"] = {**errors(0.05, 0.05), "test_mse": [0.2, 0.2]}          # better on 3 of 4, 2x on one
    assert resolvent.default_method(run({"methods": truth}))[0] == "favor+k30"
    assert resolvent.default_method(run({"methods": truth, "auto": {"chosen": "fb+kauto"}})) == (
        "fb+kauto", "the answer method auto kept")
    nan = [float("nan")] * 2
    diverged = {"favor": {**errors(0.01, 0.01), "test_mse": nan}, "fb": errors(1.0, 1.0)}   # a NaN: the worst
    assert resolvent.default_method(run({"methods": diverged}))[0] == "fb"
    diverged["fb"]["test_mse"] = nan                                      # an error no answer has: not counted
    assert resolvent.default_method(run({"methods": diverged}))[0] == "favor"
    no_truth = {m: {"trust_rel_rmse_each": {}} for m in ("favor", "favor+kauto", "fb")}
    assert resolvent.default_method(run({"methods": no_truth}))[0] == "favor+kauto"
    assert resolvent.default_method(run({"methods": no_truth}, ("fqe", "fb")))[0] == "fb"
    assert resolvent.default_method(run({"methods": no_truth, "trusted": {"chosen": "fb"}}))[0] == "fb"   # the rule's
    assert resolvent.default_method(run({"methods": truth, "trusted": {"chosen": "fb"}}))[0] == "favor+k30"   # truth's
    assert resolvent.default_method(run(None, ("sf",)))[0] == "sf"               # killed before its results
    (run(None) / "results.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="results.json is corrupt"):
        resolvent.default_method(tmp_path / str(len(list(tmp_path.iterdir())) - 1))
    with pytest.raises(CheckpointError, match="name the method to load"):
        resolvent.default_method(run(None, ("fqe",)))


def test_a_finished_runs_default_is_its_most_accurate(run_dir):
    """On a run of its own (ground truth, no auto) the default is the answer with the lowest test
    MSE where one answer is lowest on every error, and ``load`` gives it."""
    results = json.loads((run_dir / "results.json").read_text())["methods"]
    method, why = resolvent.default_method(run_dir)
    assert "ground truth" in why and resolvent.load(run_dir).method == method
    lowest = {k: min(results, key=lambda m: np.mean(results[m][k])) for k in ("test_mse", "probe_mse")}
    if len(set(lowest.values())) == 1:
        assert method == lowest["test_mse"]


def test_a_damaged_run_file_is_named_with_what_to_do(run_dir, tmp_path):
    """A corrupt config.json (the run's settings: restore it) or a results.json that is JSON but no
    object (rebuilt on --resume) is one CheckpointError naming the file, from ``load`` (the target
    policy and METHOD+kauto read config.json), ``default_method`` and the run folder alike; the
    models themselves are untouched."""
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    (copy / "results.json").write_text("[1, 2]")
    for ask in (lambda: resolvent.default_method(copy), lambda: RunDir(copy).read_results()):
        with pytest.raises(CheckpointError, match=r"results.json is not a resolvent run file .*--resume"):
            ask()
    (copy / "results.json").write_text('{"methods": []}')
    with pytest.raises(CheckpointError, match="its methods are not an object"):
        RunDir(copy).read_results()
    (copy / "config.json").write_bytes(b"\xff{")
    for ask in (lambda: resolvent.load(copy, "attention"), lambda: resolvent.load(copy, "attention+kauto"),
                lambda: RunDir(copy).read_config()):
        with pytest.raises(CheckpointError, match=r"config.json is corrupt .*restore it from a copy"):
            ask()
    assert sorted(p.name for p in (copy / "models").iterdir()) == sorted(p.name for p in (run_dir / "models").iterdir())


# favor and fb with a one-step model, a distilled tail and a bank: every default expansion
# (results/suite-time/compiles.py tallies this run's compilations)
POLICY_RUN = EvaluateConfig(methods=("favor", "fb"), n_refs=16, ref_pool=300, random_features=16,
                            onestep=OneStepConfig(hidden=(16,), steps=20),
                            distil=DistilConfig(horizon=30, points=64, rewards=4, steps=20, batch_size=16,
                                                n_refs=16, along=20, along_every=10, kernel_heads=8),
                            bank=BankConfig(points=64, horizon=30, steps=10), **TINY)


@pytest.fixture(scope="module")
def policy_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("policy-run")
    run_evaluate(POLICY_RUN, out, plot=False)
    return out


@pytest.mark.parametrize("method", ["favor", "fb"])
def test_policy_encoded_model_answers_first_step_plus_discounted_rest(policy_run, method):
    """q = r(s, a) + gamma U[r](s, a): a reward that differs only at the queries' own action
    moves the answer by exactly that difference, and save/load keeps every value."""
    model = resolvent.load(policy_run, method=method)
    assert model.xi_features["obs"].shape[0] == 300 and model.onestep is not None
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    q = model.q_values(height, obs, act)
    u = np.asarray(model.q_from_encodings(model.encode([height]), obs, act))[0, :, 0]
    np.testing.assert_allclose(q, obs[:, 0] + 0.99 * u, rtol=1e-5, atol=1e-4)
    next_height = lambda f: f["next_obs"][:, 0]  # noqa: E731 - read through the one-step model
    assert np.all(np.isfinite(model.q_values(next_height, obs, act)))
    again = resolvent.load(policy_run, method=method)
    np.testing.assert_array_equal(again.q_values(height, obs, act), q)


def test_expansion_through_the_model(policy_run, run_dir):
    """horizon = 0 is the operator itself; horizon k rolls the run's own target policy through the
    one-step model (shared by every reward at the same points) and keeps G[c] = c / (1 - gamma)."""
    model = resolvent.load(policy_run, method="favor")
    assert model.target_policy is not None                      # the family's TD3 policy, from config.json
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    np.testing.assert_array_equal(model.q_values(height, obs, act, horizon=0), model.q_values(height, obs, act))
    q3 = model.q_values(height, obs, act, horizon=3)
    first = model.expansion(obs, act, 3)
    assert model.expansion(obs, act, 3) is first                # one rollout serves every reward
    members = first.weights.shape[0]                           # every member of the ensemble rolls out
    assert members == 5 and np.all((first.weights > 0).sum(0) == 3)   # the default: the 3 most central kept
    np.testing.assert_allclose(first.weights.sum(0), 1.0)
    head = sum(0.99 ** t * first.steps["obs"][t][:, 0] for t in range(3))                      # (E n,)
    each = head + 0.99 ** 3 * model.q_values(height, first.obs, first.action)                  # (E n,)
    np.testing.assert_allclose(q3, (first.weights * each.reshape(members, -1)).sum(0), rtol=1e-5, atol=1e-4)
    const = lambda f: 3.0 * jnp.ones(len(f["obs"]))  # noqa: E731
    np.testing.assert_allclose(model.q_values(const, obs, act, horizon=3), 3.0 / (1 - 0.99), rtol=1e-4)
    other = resolvent.load(policy_run, method="fb")           # another operator shares the rollout
    other.onestep, other.target_policy, other.rollouts = model.onestep, model.target_policy, model.rollouts
    assert other.expansion(obs, act, 3) is first
    np.testing.assert_array_equal(other.expansion(obs, act, 2).obs, first.prefix(2).obs)
    for k in (3, "auto"):                                     # no points: an empty answer, nothing rolled out
        assert model.q_values(height, obs[:0], act[:0], seed=None, horizon=k).shape == (model.n_seeds, 0)
    with pytest.raises(ValueError, match="at least one point"):
        model.expansion(obs[:0], act[:0], 3)
    model.target_policy = None
    with pytest.raises(ValueError, match="horizon > 0 rolls the target policy out"):
        model.q_values(height, obs + 1, act, horizon=2)
    with pytest.raises(ValueError, match="has no one-step model"):
        resolvent.load(run_dir, method="attention").q_values(height, obs, act, horizon=2)


def test_supported_dynamics_step_the_model_at_the_datas_actions_where_pis_are_unsupported(policy_run):
    """A run's check with ``dynamics`` on: where it marks no point (a threshold past every
    distance) the answers are the plain ones to the bit; with the check's actions moved far from
    pi's (every point marked) the model steps at the data's actions, the states change and every
    step still holds pi's action at its own state."""
    plain = resolvent.load(policy_run, "favor+k10")
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    q = plain.q_values(height, obs, act)
    wide = resolvent.load(policy_run, "favor+k10")
    wide.support = replace(wide.support, ratio=1e9, dynamics=True)
    assert wide.dynamics(obs) == (None, None) == plain.dynamics(obs)     # no point unsupported: pi's own
    np.testing.assert_array_equal(wide.q_values(height, obs, act), q)
    far = resolvent.load(policy_run, "favor+k10")
    far.support = replace(far.support, actions=far.support.actions + 10.0, dynamics=True)
    assert far.dynamics(obs)[1].all()                                      # every point steered
    moved = far.expansion(obs, act, 10)
    assert not np.allclose(moved.steps["obs"][5], plain.expansion(obs, act, 10).steps["obs"][5])
    np.testing.assert_allclose(moved.steps["action"][5], plain.target_policy(moved.steps["obs"][5]), atol=1e-5)
    assert not np.allclose(far.q_values(height, obs, act), q)


def test_expansions_are_scored_and_loaded_by_name(policy_run):
    """A run with a one-step model scores every operator's expansions (``METHOD+kK`` entries,
    the reset-point metrics included) and ``load(run, "favor+k30")`` answers by that expansion."""

    methods = json.loads((policy_run / "results.json").read_text())["methods"]
    for name in ("favor+k10", "favor+k30", "favor+k60", "fb+k60"):
        assert methods[name]["horizon"] == int(name.split("+k")[1])
        assert len(methods[name]["test_r2"]) == len(methods["favor"]["test_r2"])
    assert methods["favor+k60"]["test_mse"] != methods["favor"]["test_mse"]
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    expanded = resolvent.load(policy_run, "favor+k30")
    assert expanded.horizon == 30
    np.testing.assert_array_equal(expanded.q_values(height, obs, act),
                                  resolvent.load(policy_run, "favor").q_values(height, obs, act, horizon=30))
    with pytest.raises(ValueError, match="OPERATOR\\+kK"):
        resolvent.load(policy_run, "favor+kx")


def test_distilled_operator_is_scored_saved_and_loaded(policy_run):
    """``distil.horizon`` = K adds ``METHOD+dK`` for each operator of the policy encoding: G_K
    distilled into its network (a kernel operator's widened to ``distil.kernel_heads``), scored
    like a method, saved beside the operators and loaded by name; one forward pass (no rollout), a
    constant's Q exact, answers that moved off the teacher's; it is not a peer of the horizon's
    choice."""
    methods = json.loads((policy_run / "results.json").read_text())["methods"]
    for name in ("favor+d30", "fb+d30"):
        assert methods[name]["horizon"] == 0 and len(methods[name]["distil_loss"]) == 2
        assert len(methods[name]["test_r2"]) == len(methods["favor"]["test_r2"])
    student, teacher = resolvent.load(policy_run, "favor+d30"), resolvent.load(policy_run, "favor")
    assert student.method == "favor" and student.horizon == 0
    # distil.kernel_heads 8: favor's student has twice its teacher's kernels, fb's student its own size
    assert (student.arch.kernel_heads, teacher.arch.kernel_heads) == (8, 4)
    assert resolvent.load(policy_run, "fb+d30").arch == resolvent.load(policy_run, "fb").arch
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    q = student.q_values(height, obs, act)
    assert student.rollouts._last is None                     # no rollout was made
    assert not np.allclose(q, teacher.q_values(height, obs, act))
    const = lambda f: 3.0 * jnp.ones(len(f["obs"]))  # noqa: E731
    np.testing.assert_allclose(student.q_values(const, obs, act), 3.0 / (1 - 0.99), rtol=1e-4)


def test_distilled_operator_as_the_expansions_tail(policy_run):
    """``METHOD+dK+kk``: G_k with the student after the k model steps, scored at every horizon of
    the run (not one of auto's candidates) and loaded by name: the same first k steps as the
    teacher's G_k, the tail the student's: the two differ by gamma^k c_k (student - teacher) at s_k."""
    methods = json.loads((policy_run / "results.json").read_text())["methods"]
    for k in (10, 30, 60, 150, 400):
        assert methods[f"favor+d30+k{k}"]["horizon"] == k
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    hybrid, expansion = resolvent.load(policy_run, "favor+d30+k10"), resolvent.load(policy_run, "favor+k10")
    student, teacher = resolvent.load(policy_run, "favor+d30"), resolvent.load(policy_run, "favor")
    assert hybrid.horizon == 10 and hybrid.onestep is not None
    ex = hybrid.expansion(obs, act, 10)
    s_k, a_k = ex.obs, ex.action                                                   # (E n, .) where the tail starts
    tail = lambda m: ex.member_mean(ex.alive[-1] * m.q_values(height, s_k, a_k, seed=None))  # noqa: E731 - (S, n)
    gap = hybrid.q_values(height, obs, act, seed=None) - expansion.q_values(height, obs, act, seed=None)
    np.testing.assert_allclose(gap, 0.99 ** 10 * (tail(student) - tail(teacher)), rtol=1e-4, atol=1e-3)
    assert np.abs(gap).max() > 1e-3                                               # the tails differ
    const = lambda f: 3.0 * jnp.ones(len(f["obs"]))  # noqa: E731
    np.testing.assert_allclose(hybrid.q_values(const, obs, act), 3.0 / (1 - 0.99), rtol=1e-4)


def test_the_banks_answers(policy_run, run_dir, tmp_path):
    """``METHOD+bK+kk``: at most k model steps, then the values of the bank states nearest s_k (the
    rest of their own rollouts), scored at every horizon of the run (not one of auto's candidates)
    and loaded by name, the bank rolled out again from its saved states (the same answers); linear
    in r, exact for a constant; the hybrid and the operator's own G_k differ by gamma^k c_k (V - G)
    at s_k, k each point's own (where the bank reached it); at a bank state its own value; a name
    the run cannot answer says why."""
    results = json.loads((policy_run / "results.json").read_text())
    for k in (10, 30, 60, 150, 400):
        for name in ("favor", "fb"):
            assert results["methods"][f"{name}+b30+k{k}"]["horizon"] == k
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    cost = lambda f: f["obs"][:, 1] - 0.1 * f["action"][:, 0] ** 2  # noqa: E731
    banked, expansion = resolvent.load(policy_run, "favor+b30+k10"), resolvent.load(policy_run, "favor+k10")
    bank, policy = banked.bank, banked.target_policy
    banked.target_policy = None                        # (a run whose policy was a callable: set it, then ask)
    with pytest.raises(ValueError, match="set model.target_policy"):
        banked.q_values(height, obs, act)
    banked.target_policy = policy
    q = banked.q_values(height, obs, act, seed=None)                               # (S, n): the bank built now
    assert banked.horizon == 10 and len(bank) > 0 and bank.states.shape[1] == 3
    np.testing.assert_array_equal(resolvent.load(policy_run, "favor+b30+k10").q_values(height, obs, act, seed=None), q)
    combo = lambda f: 2.0 * height(f) - 3.0 * cost(f)  # noqa: E731
    np.testing.assert_allclose(banked.q_values(combo, obs, act, seed=None),
                               2.0 * q - 3.0 * banked.q_values(cost, obs, act, seed=None), rtol=1e-4, atol=1e-3)
    const = lambda f: 3.0 * jnp.ones(len(f["obs"]))  # noqa: E731
    np.testing.assert_allclose(banked.q_values(const, obs, act), 3.0 / (1 - 0.99), rtol=1e-4)
    ex = banked.expansion(obs, act, 10)                  # each point stops where the bank reaches it (bank.reach)
    assert bank.cfg.reach > 0 and np.all((ex.ends >= bank.cfg.least) & (ex.ends <= 10))
    operator = lambda s, a: expansion._q(height, s, a)  # noqa: E731 - G[r], (S, rows)
    v = bank.tail(height, operator, 0.99)(ex.obs, ex.action)                      # (S, E n) at s_k_i
    own = np.concatenate([expansion.q_values(height, obs[i:i + 1], act[i:i + 1], seed=None, horizon=int(k))
                          for i, k in enumerate(ex.ends)], -1)                    # G_k_i, each point's own k_i
    gamma_k = 0.99 ** np.tile(ex.ends, len(ex.weights))                            # (E n,)
    np.testing.assert_allclose(q - own, ex.member_mean(gamma_k * ex.alive[-1] * (v - operator(ex.obs, ex.action))),
                               rtol=1e-4, atol=1e-3)
    values = bank.values(height, operator, 0.99)                                   # (S, B)
    _, first, count = np.unique(bank.states, axis=0, return_index=True, return_counts=True)
    alone = first[count == 1][:5]                                                  # states no other bank state shares
    np.testing.assert_allclose(bank.tail(height, operator, 0.99)(bank.states[alone], None), values[:, alone], rtol=1e-6)
    for wrong, why in (("favor+b30", "k >= 1"), ("favor+b400+k10", "rolls out 30 steps"),
                       ("favor+bx+k10", r"OPERATOR\+bK\+kk")):
        with pytest.raises(ValueError, match=why):
            resolvent.load(policy_run, wrong)
    with pytest.raises(ValueError, match="fixed horizon"):
        banked.q_values(height, obs, act, horizon="auto")
    with pytest.raises(FileNotFoundError, match="no bank"):
        load_bank(run_dir / "models", 30)
    bad = tmp_path / "models"
    bad.mkdir()
    (bad / "bank.npz").write_bytes(b"not a bank")
    with pytest.raises(CheckpointError, match="bank.npz is corrupt"):
        load_bank(bad, 30)


def test_distillation_targets_made_in_parts_are_one_rollouts(policy_run):
    """The distillation's points and targets (G_K at the points, the rest of the rollout along it)
    made part by part where one rollout would exceed the budget: the same points in the same order
    and the same answers as one rollout."""
    rng = np.random.default_rng(1)
    obs, act = rng.normal(size=(7, 3)).astype(np.float32), rng.uniform(-2, 2, (7, 1)).astype(np.float32)
    rewards = [lambda f: f["obs"][:, 0] - 0.1 * f["action"][:, 0] ** 2, lambda f: f["obs"][:, 1]]
    whole, parted = resolvent.load(policy_run, "favor"), resolvent.load(policy_run, "favor")
    parted.rollouts = Rollouts(budget=rollout_bytes(parted.onestep, 3, 3, 1, 30))
    one = distil_targets(whole, obs, act, rewards, 30, (0, 10, 20), 0.99)
    three = distil_targets(parted, obs, act, rewards, 30, (0, 10, 20), 0.99)
    assert len(parted.rollouts.parts(parted.onestep, obs, act, 30)) == 3
    assert one[0].shape[0] == one[2].shape[2] > len(obs) and one[2].shape[:2] == (2, whole.n_seeds)
    np.testing.assert_array_equal(three[0][:len(obs)], obs)                 # the points first, then along
    for got, want in zip(three, one):                                        # (a part's batch rounds differently)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_mean_of_answers_is_their_mean_from_one_rollout(policy_run):
    """``load(run, "favor+k30~fb+k30")``: the mean of the two answers, its members sharing one
    rollout; linear in r as each is; kauto's members choose one k, each other's peers;
    answers at two horizons, or one answer twice, are one clear error; it has no policy."""
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    effort = lambda f: f["action"][:, 0] ** 2  # noqa: E731
    for k in (30, "auto"):
        mean = resolvent.load(policy_run, f"favor+k{k}~fb+k{k}")
        assert (mean.method, mean.horizon, mean.gamma, mean.n_seeds) == (f"favor+k{k}~fb+k{k}", k, 0.99, 2)
        alone = [resolvent.load(policy_run, f"{m}+k{k}") for m in ("favor", "fb")]
        want = np.mean([m.q_values(height, obs, act, seed=None) for m in alone], 0)
        np.testing.assert_allclose(mean.q_values(height, obs, act, seed=None), want, rtol=1e-5, atol=1e-5)
    favor, fb = mean.members                                    # kauto: e_op is the spread of the same operators
    assert len(favor.peers) == len(fb.peers) == 1 and favor.peers[0] is fb and fb.peers[0] is favor  # one read each
    assert favor.choose_horizon(height, obs, act) == fb.choose_horizon(height, obs, act)
    mean = resolvent.load(policy_run, "favor+k30~fb+k30")
    favor, fb = mean.members
    assert fb.rollouts is favor.rollouts and fb.expansion(obs, act, 30) is favor.expansion(obs, act, 30)
    both = lambda f: 2.0 * height(f) - effort(f)  # noqa: E731
    np.testing.assert_allclose(mean.q_values(both, obs, act), 2 * mean.q_values(height, obs, act)
                               - mean.q_values(effort, obs, act), rtol=1e-4, atol=1e-4)
    mean.target_policy = None                                   # set on every member
    assert favor.target_policy is None and fb.target_policy is None
    with pytest.raises(ValueError, match="every answer at one horizon"):
        resolvent.load(policy_run, "favor+k30~fb+k10")
    with pytest.raises(ValueError, match="two or more distinct answers"):
        resolvent.load(policy_run, "favor+k30~favor+k30")
    with pytest.raises(ValueError, match="has no policy of its own"):
        mean.policy(height)


def test_the_runs_answers_are_what_load_answers_at_the_truths_own_points(policy_run):
    """predictions.npz holds what ``resolvent.load(run, method)`` answers at the ground truth's
    points: the run answers at the points as given, not normalised and back (HalfCheetah's closed
    loop moves a k = 400 answer by several percent for an input 1e-6 away)."""
    _, p = open_run(policy_run)
    obs, act = p.raw_points()
    for kind, gt in p.source.points.items():
        np.testing.assert_array_equal(obs[p.slices[kind]], gt.obs0)
        np.testing.assert_array_equal(act[p.slices[kind]], gt.action0)
    gt = p.source.points["reset"]
    model = resolvent.load(policy_run, "favor+k30")
    with np.load(policy_run / "predictions.npz") as pred:
        for i, (_, r) in enumerate(p.source.rewards["test"]):
            np.testing.assert_allclose(np.asarray(model.q_values(r, gt.obs0, gt.action0, seed=None)).mean(0),
                                       pred["favor+k30|test|reset|pred"][i], rtol=1e-6, atol=1e-6)


def test_horizon_chosen_per_reward(policy_run):
    """METHOD+kauto: each reward's k from 0 and the run's horizons (the one-step ensemble's spread
    under pi against the operators' spread; a single model's error along the data's stretches),
    the answer that horizon's; a constant's Q stays exact; the run's results record every
    reward's choice; a model without peers, or a single model without stretches, says what it
    needs."""
    model = resolvent.load(policy_run, "favor+kauto")
    assert model.horizon == "auto" and model.horizons == (10, 30, 60, 150, 400)
    assert [p.method for p in model.peers] == ["fb"] and model.onestep.kept == 3
    assert model.stretches is None      # an ensemble checks itself: the run keeps no stretches
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5]], np.float32)
    act = np.array([[0.0], [1.0]], np.float32)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    k = model.choose_horizon(height, obs, act)
    candidates = (0, *model.horizons)
    e_op = np.stack([m.q_values(height, obs, act, seed=None, horizon=0).mean(0) for m in (model, *model.peers)]).var(0)
    spread = member_spread(model.expansion(obs, act, 400), height, candidates, 0.99)
    assert k == choose(spread, float(e_op.mean()), candidates, 0.99)
    single = resolvent.load(policy_run, "favor+kauto")
    single.onestep = single.onestep._replace(keep=1)
    with pytest.raises(ValueError, match="no ensemble and no stretches"):
        single.choose_horizon(height, obs, act)
    line = np.linspace(-1.0, 1.0, 501, dtype=np.float32)[:, None] * np.ones((1, 3), np.float32)
    single.stretches = find_stretches({"obs": line[:-1], "action": np.zeros((500, 1), np.float32),
                                       "next_obs": line[1:]}, 400, 8, 0)
    check = validate(single.onestep, single.target_policy, single.stretches)
    assert single.choose_horizon(height, obs, act) == choose(
        model_errors(check, single.stretches, height, candidates, 0.99), float(e_op.mean()), candidates, 0.99)
    np.testing.assert_array_equal(model.q_values(height, obs, act), model.q_values(height, obs, act, horizon=k))
    const = lambda f: 3.0 * jnp.ones(len(f["obs"]))  # noqa: E731
    np.testing.assert_allclose(model.q_values(const, obs, act), 3.0 / (1 - 0.99), rtol=1e-4)
    # several groups of points at once: each chooses as it would alone
    two = (np.array([[0.5, 0.5, 0.0], [-0.3, 0.9, 1.0]], np.float32), np.array([[0.5], [-1.0]], np.float32))
    both_obs, both_act = np.concatenate([obs, two[0]]), np.concatenate([act, two[1]])
    assert model.choose_horizons(height, both_obs, both_act, [slice(0, 2), slice(2, 4)]) == [
        model.choose_horizon(height, obs, act), model.choose_horizon(height, *two)]
    # the run chose per reward and kind of points, and kauto's answer at each kind is that k's
    results = json.loads((policy_run / "results.json").read_text())
    entry = results["methods"]["favor+kauto"]
    assert entry["horizon"] == "auto" and set(entry["horizon_each"]) >= {"train", "test", "probe"}
    pred = np.load(policy_run / "predictions.npz")
    for i, each in enumerate(entry["horizon_each"]["probe"].values()):
        assert set(each) == set(results["eval_points"]) and set(each.values()) <= set(candidates)
        for kind, k in each.items():
            fixed = pred[f"favor{f'+k{k}' if k else ''}|probe|{kind}|pred"][..., i, :]   # k = 0: training's
            np.testing.assert_allclose(pred[f"favor+kauto|probe|{kind}|pred"][..., i, :], fixed, rtol=1e-4)
    with pytest.raises(ValueError, match="horizon 'auto' chooses"):
        resolvent.load(policy_run, "favor").q_values(height, obs, act, horizon="auto")
    with pytest.raises(ValueError, match="or OPERATOR\\+kauto"):
        resolvent.load(policy_run, "favor+kfast")


def test_points_too_many_for_one_rollout_are_answered_in_parts(policy_run):
    """Where one rollout at every query point would exceed the ``Rollouts`` budget, the points go in
    parts, each rolled out and dropped: the answers (a fixed k, kauto's choice and its answer, every
    seed) are those of one rollout, and no rollout is kept."""
    rng = np.random.default_rng(0)
    obs, act = rng.normal(size=(7, 3)).astype(np.float32), rng.uniform(-2, 2, (7, 1)).astype(np.float32)
    height = lambda f: f["obs"][:, 0] - 0.1 * f["action"][:, 0] ** 2  # noqa: E731
    whole = resolvent.load(policy_run, "favor+kauto")
    parted = resolvent.load(policy_run, "favor+kauto")
    parted.rollouts = Rollouts(budget=rollout_bytes(parted.onestep, 3, 3, 1, 400))
    assert [p.stop - p.start for p in parted.rollouts.parts(parted.onestep, obs, act, 400)] == [3, 3, 1]
    assert parted.choose_horizon(height, obs, act) == whole.choose_horizon(height, obs, act)
    for horizon in (400, "auto"):
        np.testing.assert_allclose(parted.q_values(height, obs, act, seed=None, horizon=horizon),
                                   whole.q_values(height, obs, act, seed=None, horizon=horizon), rtol=1e-6, atol=1e-6)
    assert parted.rollouts._last is None and whole.rollouts._last is not None
    for model in (whole, parted):                        # where "auto" chooses k = 0: the operator's own answer
        model.choose_horizon, model._choose = (lambda *args: 0), (lambda *args: [0])
    np.testing.assert_array_equal(whole.q_values(height, obs, act, horizon="auto"), whole.q_values(height, obs, act))
    np.testing.assert_allclose(parted.q_values(height, obs, act, horizon="auto"), whole.q_values(height, obs, act),
                               rtol=1e-6)                # (a part's batch of points rounds differently)
    parted.q_values(height, obs, act, horizon=30)        # a shorter rollout fits in one part: kept
    assert parted.rollouts._last is not None and parted.rollouts._last[1].horizon == 30
