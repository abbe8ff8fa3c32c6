"""The one-step model of the data: it learns a known system, keeps constants exact, rolls out under
a policy as the system does, saves and loads exactly, and the same key gives the same model."""
import jax
import numpy as np
import pytest

from onestep_models import drift_model
from resolvent.algorithms import onestep

A = np.array([[0.95, 0.1], [-0.1, 0.95]], np.float32)    # a damped rotation
B = np.array([[0.0], [0.1]], np.float32)


def linear_data(n=4000, seed=0):
    """s' = A s + B a, a scalar ``height`` = s_0 + 0.5 a, and a constant ``flag``."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    action = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
    return {"obs": obs, "action": action, "next_obs": obs @ A.T + action @ B.T,
            "height": obs[:, 0] + 0.5 * action[:, 0], "flag": np.full(n, 3.0, np.float32)}


def fitted(steps=2000, seed=0):
    data = linear_data()
    x = np.concatenate([data["obs"], data["action"]], -1)
    config = onestep.OneStepConfig(hidden=(64, 64), steps=steps, ensemble=1, keep=0)
    return onestep.fit(config, jax.random.PRNGKey(seed), data, x.mean(0), x.std(0)), data


def test_learns_a_linear_system_and_keeps_constants():
    model, _ = fitted()
    test = linear_data(500, seed=1)
    pred = onestep.predict(model, test["obs"], test["action"])
    assert np.sqrt(np.mean((np.asarray(pred["next_obs"]) - test["next_obs"]) ** 2)) < 0.02
    assert np.sqrt(np.mean((np.asarray(pred["height"]) - test["height"]) ** 2)) < 0.03
    np.testing.assert_allclose(np.asarray(pred["flag"]), 3.0, atol=1e-5)   # a constant stays its constant


def test_a_rollout_under_a_policy_follows_the_system():
    """Closed loop a = -0.5 s_1 for 20 steps: the model's states stay near the system's."""
    model, _ = fitted()
    s_true = s_model = np.array([[0.8, -0.5], [-0.3, 0.6]], np.float32)
    for _ in range(20):
        s_true = s_true @ A.T + (-0.5 * s_true[:, 1:]) @ B.T
        s_model = np.asarray(onestep.predict(model, s_model, -0.5 * s_model[:, 1:])["next_obs"])
    assert np.abs(s_model - s_true).max() < 0.05


def test_same_key_same_model_and_exact_save_load():
    a, data = fitted(steps=30)
    b, _ = fitted(steps=30)
    c, _ = fitted(steps=30, seed=1)
    flat = lambda m: np.concatenate([np.ravel(v) for v in jax.tree_util.tree_leaves(m.params)])   # noqa: E731
    np.testing.assert_array_equal(flat(a), flat(b))
    assert not np.array_equal(flat(a), flat(c))
    back = onestep.from_arrays(onestep.to_arrays(a))
    assert back.keys == a.keys == ("height", "flag")
    for k in ("next_obs", "height", "flag"):
        np.testing.assert_array_equal(np.asarray(onestep.predict(back, data["obs"], data["action"])[k]),
                                      np.asarray(onestep.predict(a, data["obs"], data["action"])[k]))
    np.testing.assert_array_equal(back.low, a.low)
    assert back.cycle == a.cycle == onestep.OneStepConfig.cycle
    assert onestep.from_arrays(onestep.to_arrays(a._replace(cycle=0.0))).cycle == 0.0
    older = {k: v for k, v in onestep.to_arrays(a._replace(cycle=0.0)).items() if k != "onestep_cycle"}
    assert onestep.from_arrays(older).cycle == onestep.OneStepConfig.cycle      # saved before: the default
    assert back.close and not onestep.from_arrays(onestep.to_arrays(a._replace(close=False))).close
    older = {k: v for k, v in onestep.to_arrays(a._replace(close=False)).items() if k != "onestep_close"}
    assert onestep.from_arrays(older).close == onestep.OneStepConfig.close      # saved before: the default
    np.testing.assert_array_equal(back.residual, a.residual)
    assert (back.noise, back.copies) == (onestep.OneStepConfig.noise, onestep.OneStepConfig.copies)
    noisy = onestep.from_arrays(onestep.to_arrays(a._replace(noise=0.3, copies=4)))
    assert (noisy.noise, noisy.copies) == (0.3, 4)
    older = {k: v for k, v in onestep.to_arrays(a).items() if k != "onestep_residual"}
    assert onestep.from_arrays(older).residual is None                          # saved before it was kept


def test_the_residual_is_the_std_of_the_models_error_on_the_data():
    """sigma per state dimension: the std of next_obs - D(s, a) over the data's transitions, here a
    linear system with noise of std 0.05 on the first dimension and none on the second."""
    data = linear_data(8000)
    rng = np.random.default_rng(3)
    data["next_obs"] = data["next_obs"] + np.c_[0.05 * rng.standard_normal(len(data["obs"])),
                                                np.zeros(len(data["obs"]))].astype(np.float32)
    x = np.concatenate([data["obs"], data["action"]], -1)
    model = onestep.fit(onestep.OneStepConfig(hidden=(64, 64), steps=2000, ensemble=1, keep=0),
                        jax.random.PRNGKey(0), data, x.mean(0), x.std(0))
    pred = np.asarray(onestep.predict(model, data["obs"], data["action"])["next_obs"])
    np.testing.assert_allclose(model.residual, (data["next_obs"] - pred).std(0), rtol=1e-4, atol=1e-6)
    assert model.residual.shape == (2,) and 0.045 < model.residual[0] < 0.056 and model.residual[1] < 0.02


def test_an_ensemble_of_members_fitted_apart():
    """Members from their own initialisations and batches: each learns the system, they differ,
    one step predicts their mean, a rollout step moves each member from its own state; saved and
    loaded exactly, keep included."""
    data = linear_data()
    x = np.concatenate([data["obs"], data["action"]], -1)
    config = onestep.OneStepConfig(hidden=(64, 64), steps=2000, ensemble=3, keep=2)
    model = onestep.fit(config, jax.random.PRNGKey(0), data, x.mean(0), x.std(0))
    assert model.members == 3 and model.keep == 2
    kernels = model.params["params"]["Dense_0"]["kernel"]
    assert not np.allclose(kernels[0], kernels[1])
    test = linear_data(500, seed=1)
    pred = onestep.predict(model, test["obs"], test["action"])
    assert np.sqrt(np.mean((np.asarray(pred["next_obs"]) - test["next_obs"]) ** 2)) < 0.02
    member = [model._replace(params=jax.tree_util.tree_map(lambda v, i=i: v[i], model.params)) for i in range(3)]
    obs, act = test["obs"][:4], test["action"][:4]
    step = onestep.rollout_step(model, np.concatenate([obs, -obs, 2 * obs]), np.tile(act, (3, 1)))
    for i, s in enumerate((obs, -obs, 2 * obs)):
        np.testing.assert_allclose(np.asarray(step["next_obs"][4 * i:4 * i + 4]),
                                   np.asarray(onestep.predict(member[i], s, act)["next_obs"]), atol=1e-5)
    # the step is compiled whole once for the model and kept; op by op it is the same transition
    assert onestep.STEPS[0][0] is model
    eager = onestep.member_step(model, jax.numpy.asarray(np.concatenate([obs, -obs, 2 * obs])),
                                jax.numpy.asarray(np.tile(act, (3, 1))))
    for k in eager:
        np.testing.assert_allclose(np.asarray(step[k]), np.asarray(eager[k]), rtol=1e-6, atol=1e-6, err_msg=k)
    back = onestep.from_arrays(onestep.to_arrays(model))
    assert back.members == 3 and back.keep == 2
    # a model read from disk holds numpy arrays: its compiled step holds them on the device, put there once
    onestep.rollout_step(back, np.concatenate([obs, -obs, 2 * obs]), np.tile(act, (3, 1)))
    assert onestep.STEPS[0][0] is back
    assert all(isinstance(v, np.ndarray) for v in jax.tree_util.tree_leaves(back.params))
    assert all(isinstance(v, jax.Array) for v in jax.tree_util.tree_leaves(onestep.STEPS[0][2]))
    np.testing.assert_array_equal(np.asarray(onestep.predict(back, test["obs"], test["action"])["next_obs"]),
                                  np.asarray(pred["next_obs"]))


def test_bad_ensemble_settings():
    data = linear_data(100)
    x = np.concatenate([data["obs"], data["action"]], -1)
    for ensemble, keep in ((0, 0), (3, 4), (3, -1)):
        with pytest.raises(ValueError, match="ensemble must be >= 1"):
            onestep.fit(onestep.OneStepConfig(hidden=(8,), steps=2, ensemble=ensemble, keep=keep),
                        jax.random.PRNGKey(0), data, x.mean(0), x.std(0))
    for noise, copies in ((-0.1, 4), (0.3, 0), (float("nan"), 4)):
        with pytest.raises(ValueError, match="noise is a multiple of the residual's std"):
            onestep.fit(onestep.OneStepConfig(hidden=(8,), steps=2, noise=noise, copies=copies),
                        jax.random.PRNGKey(0), data, x.mean(0), x.std(0))


def test_scalars_stay_within_their_range_in_the_data():
    """Far outside the data an MLP extrapolates linearly; a scalar's prediction (a conditional
    mean) stays within the values the data holds, and the range is saved with the model."""
    model, data = fitted(steps=300)
    obs, act = np.array([[8.0, 8.0], [-8.0, -8.0]], np.float32), np.array([[8.0], [-8.0]], np.float32)
    far = onestep.predict(model, obs, act)
    height = np.asarray(far["height"])
    np.testing.assert_allclose(height, [data["height"].max(), data["height"].min()], rtol=1e-6)
    back = onestep.from_arrays(onestep.to_arrays(model))
    np.testing.assert_array_equal(back.scalar_low, model.scalar_low)
    np.testing.assert_array_equal(back.scalar_high, model.scalar_high)


def test_a_quadratic_of_the_action_is_computed_not_predicted():
    """A scalar the data shows to be a quadratic of the action (a control cost) is computed from
    the action, exact also where no action of the data was (a = 0, a = 3); the others are
    predicted; save and load keep it."""
    data = linear_data()
    data["ctrl"] = -0.5 * data["action"][:, 0] ** 2 + 0.1 * data["action"][:, 0]
    x = np.concatenate([data["obs"], data["action"]], -1)
    config = onestep.OneStepConfig(hidden=(16,), steps=200, ensemble=1, keep=0)
    model = onestep.fit(config, jax.random.PRNGKey(0), data, x.mean(0), x.std(0))
    known = np.isfinite(model.exact[:, 0])
    assert [k for k, e in zip(model.keys, known) if e] == ["ctrl"]   # height reads the state; flag is constant
    a = np.array([[0.0], [0.01], [-0.5], [3.0]], np.float32)
    pred = onestep.predict(model, np.zeros((4, 2), np.float32), a)
    np.testing.assert_allclose(np.asarray(pred["ctrl"]), -0.5 * a[:, 0] ** 2 + 0.1 * a[:, 0], atol=1e-5)
    again = onestep.predict(onestep.from_arrays(onestep.to_arrays(model)), np.zeros((4, 2), np.float32), a)
    np.testing.assert_array_equal(np.asarray(again["ctrl"]), np.asarray(pred["ctrl"]))


def goal_data(n=4000, seed=0):
    """s' = s + a on a line, the episode ending where s' reaches 1, which pays 10; every step
    costs a^2: r = 10 terminated - a^2. A noisy behaviour: a ~ U(-0.3, 0.3)."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
    action = rng.uniform(-0.3, 0.3, (n, 1)).astype(np.float32)
    nxt = obs + action
    end = (nxt[:, 0] >= 1.0).astype(np.float32)
    return {"obs": obs, "action": action, "next_obs": nxt, "reward": 10.0 * end - action[:, 0] ** 2,
            "terminated": end}


def goal_rule(f):
    return (f["next_obs"][:, 0] >= 1.0).astype(np.float32)


def fitted_split(data, steps=1500, rule=goal_rule):
    x = np.concatenate([data["obs"], data["action"]], -1)
    config = onestep.OneStepConfig(hidden=(32, 32), steps=steps, ensemble=1, keep=0)
    model = onestep.fit(config, jax.random.PRNGKey(0), data, x.mean(0), x.std(0), split=True)
    return model._replace(terminal=rule)


def test_a_split_model_ends_by_the_rule_and_pays_what_an_ending_pays():
    """Fitted split, the flag is the rule's at the model's own next state (0 or 1, never a share),
    and the reward is the going-on part or the ending part with it: both are quadratics of the
    action on their own rows, so computed exactly."""
    data = goal_data()
    model = fitted_split(data)
    assert model.split and model.keys == ("reward", "terminated")
    test = goal_data(2000, seed=1)
    pred = {k: np.asarray(v) for k, v in onestep.predict(model, test["obs"], test["action"]).items()}
    np.testing.assert_array_equal(pred["terminated"], goal_rule(pred))
    assert set(np.unique(pred["terminated"])) == {0.0, 1.0}
    np.testing.assert_allclose(pred["reward"], 10.0 * pred["terminated"] - test["action"][:, 0] ** 2, atol=1e-4)
    # where the model's next state and the system's agree about the goal, so do flag and reward
    same = goal_rule(pred) == test["terminated"]
    assert same.mean() > 0.98
    np.testing.assert_allclose(pred["reward"][same], test["reward"][same], atol=1e-4)


def test_a_split_model_saves_its_rule_by_name_and_not_a_python_one():
    data = goal_data(1000)
    model = fitted_split(data, steps=30)
    named = model._replace(terminal=onestep.RuleRef(f"{__file__}:goal_rule"))
    again = onestep.from_arrays(onestep.to_arrays(named))
    assert isinstance(again.terminal, onestep.RuleRef) and again.terminal.ref == named.terminal.ref
    np.testing.assert_array_equal(np.asarray(onestep.predict(again, data["obs"], data["action"])["reward"]),
                                  np.asarray(onestep.predict(model, data["obs"], data["action"])["reward"]))
    back = onestep.from_arrays(onestep.to_arrays(model))
    assert back.split and back.terminal is None
    with pytest.raises(ValueError, match="fitted for a termination rule, and none is set"):
        onestep.predict(back, data["obs"], data["action"])
    back = back._replace(terminal=goal_rule)
    for k in ("next_obs", "reward", "terminated"):
        np.testing.assert_array_equal(np.asarray(onestep.predict(back, data["obs"], data["action"])[k]),
                                      np.asarray(onestep.predict(model, data["obs"], data["action"])[k]))
    plain = onestep.from_arrays(onestep.to_arrays(fitted(steps=30)[0]))
    assert not plain.split and "onestep_split" not in onestep.to_arrays(plain)


@pytest.mark.parametrize("rule, message", [
    (lambda f: f["next_obs"][:, 0] >= 1.0, None),                              # booleans are 0 and 1
    (lambda f: 2.0 + 0 * f["next_obs"][:, 0], r"outside \[0, 1\]"),
    (lambda f: f["next_obs"] >= 1.0, r"termination rule returned shape \(2, 1\)"),
    (lambda f: f["reward"] > 0, "termination rule asked for 'reward'"),
    (lambda f: 1 / 0, "termination rule failed on the one-step model's transitions: ZeroDivisionError"),
])
def test_bad_termination_rules_are_named(rule, message):
    model = fitted_split(goal_data(500), steps=10, rule=rule)
    obs, action = np.array([[0.95], [0.1]], np.float32), np.array([[0.3], [0.0]], np.float32)
    if message is None:
        onestep.predict(model, obs, action)
        onestep.rollout_step(model, obs, action)
        return
    with pytest.raises(ValueError, match=message):
        onestep.predict(model, obs, action)
    with pytest.raises(ValueError, match=message):     # a rollout asks the rule as it goes, checked the same way
        onestep.rollout_step(model, obs, action)


def test_a_split_fit_needs_the_data_to_show_an_ending():
    data = goal_data(500)
    config = onestep.OneStepConfig(hidden=(8,), steps=10, ensemble=1, keep=0)
    x = np.concatenate([data["obs"], data["action"]], -1)
    with pytest.raises(ValueError, match="does not store"):
        onestep.fit(config, jax.random.PRNGKey(0), {k: v for k, v in data.items() if k != "terminated"},
                    x.mean(0), x.std(0), split=True)
    with pytest.raises(ValueError, match="no transition of the dataset terminates"):
        onestep.fit(config, jax.random.PRNGKey(0), {**data, "terminated": 0 * data["terminated"]},
                    x.mean(0), x.std(0), split=True)


def test_the_rule_checked_against_the_data():
    data = goal_data(500)
    assert onestep.rule_disagreement(goal_rule, data) == (0, 500)
    wrong, n = onestep.rule_disagreement(lambda f: (f["next_obs"][:, 0] >= 0.9).astype(np.float32), data)
    assert n == 500 and wrong == int(((data["next_obs"][:, 0] >= 0.9) & (data["next_obs"][:, 0] < 1.0)).sum()) > 0


def capped_model(cap: float) -> onestep.OneStepModel:
    """Three state dimensions of std 2, 0.5 and 0 (a constant), the model's residual 0.1, 0.5 and
    none of it."""
    return drift_model(np.array([0.0, 0.0, 0.0], np.float32))._replace(
        x_std=np.array([2.0, 0.5, 0.0, 1.0], np.float32),            # (s, a)
        residual=np.array([0.2, 0.25, 0.3], np.float32), noise_cap=cap)


def test_noise_reach_names_the_dimension_a_noisy_rollout_moves_past_a_tenth_of_its_spread():
    """c sigma_d / std_d > NOISE_REACH, uncapped or capped above it: the message names d, how far,
    the cap and the largest c within; at or below it (the default cap keeps every dimension there),
    with no noise or no residual: None."""
    model = capped_model(0.0)
    assert onestep.noise_reach(model) is None                        # noise 0
    assert onestep.noise_reach(model._replace(noise=0.3, residual=None)) is None
    assert onestep.noise_reach(model._replace(noise=0.2)) is None    # 0.2 * 0.5 = 0.1: within
    message = onestep.noise_reach(model._replace(noise=0.3))
    assert message == ("onestep noise 0.3 moves state dimension 1 by 0.15 of the data's std every model step (1 of 3 "
                       "dimensions above 0.1; the model's residual there is 0.5 of it): the copies leave the data, "
                       "as on Ant-Dir at 0.3 uncapped, where every probe came out worse; --onestep.noise-cap 0.1 "
                       "(the default), or --onestep.noise 0.2 or less, keeps every dimension within 0.1")
    assert "(2 of 3 dimensions" in onestep.noise_reach(model._replace(noise=1.5))
    assert onestep.noise_reach(capped_model(onestep.NOISE_REACH)._replace(noise=100.0)) is None
    assert " by 0.12 of " in onestep.noise_reach(capped_model(0.12)._replace(noise=0.3))


def test_the_noise_is_c_sigma_capped_at_a_fraction_of_each_dimensions_std():
    """noise_scale: c sigma_d where it is at most noise_cap std_d, else noise_cap std_d; a
    constant dimension is never moved; cap 0: c sigma everywhere. The config's cap is NOISE_REACH,
    carried into the fitted model, saved with it; a model saved before it is uncapped, as it was."""
    model = capped_model(0.1)._replace(noise=0.3)
    np.testing.assert_allclose(onestep.noise_scale(model), [0.06, 0.05, 0.0], rtol=1e-6)     # 0.3 sigma, 0.1 std, 0
    np.testing.assert_allclose(onestep.noise_scale(model, 1.0), [0.2, 0.05, 0.0], rtol=1e-6)
    np.testing.assert_allclose(onestep.noise_scale(capped_model(0.0)._replace(noise=0.3)), [0.06, 0.075, 0.09],
                               rtol=1e-6)
    assert onestep.OneStepConfig.noise_cap == onestep.NOISE_REACH
    data = linear_data(500)
    x = np.concatenate([data["obs"], data["action"]], -1)
    fit = onestep.fit(onestep.OneStepConfig(hidden=(8,), steps=2, noise_cap=0.05), jax.random.PRNGKey(0), data,
                      x.mean(0), x.std(0))
    assert fit.noise_cap == 0.05 and onestep.from_arrays(onestep.to_arrays(fit)).noise_cap == 0.05
    older = {k: v for k, v in onestep.to_arrays(fit).items() if k != "onestep_noise_cap"}
    assert onestep.from_arrays(older).noise_cap == 0.0
    with pytest.raises(ValueError, match="noise_cap is a fraction of the data's state std, >= 0"):
        onestep.check(onestep.OneStepConfig(noise_cap=-0.1))
