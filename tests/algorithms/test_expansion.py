"""The model-based expansion G_k: exact answers with a one-step model whose rollout is known,
and the operator's exact properties kept (linear, monotone, constants)."""
import numpy as np
import pytest

from resolvent.algorithms.expansion import expand, expanded_q
from resolvent.algorithms.onestep import OneStepModel

GAMMA = 0.9


def drift_model(delta, terminated: float | None = None) -> OneStepModel:
    """A one-step model with zero weights: it predicts its target means, next_obs = obs + delta
    and a constant termination probability."""
    keys = ("terminated",) if terminated is not None else ()
    y_mean = np.array([*delta, *([terminated] if terminated is not None else [])], np.float32)
    dy, dx, h = len(y_mean), len(delta) + 1, 4
    params = {"params": {"Dense_0": {"kernel": np.zeros((dx, h), np.float32), "bias": np.zeros(h, np.float32)},
                         "Dense_1": {"kernel": np.zeros((h, dy), np.float32), "bias": np.zeros(dy, np.float32)}}}
    return OneStepModel(params, np.zeros(dx, np.float32), np.ones(dx, np.float32), y_mean,
                        np.ones(dy, np.float32), keys, (h,))


def policy(obs):
    return -obs[:, :1]                                 # pi(s) = -s_0


def height(f):
    return f["obs"][:, 0]


def bootstrap(s, a):                                   # G[r](s, a) for two seeds: (2, n)
    return np.stack([s[:, 0] + a[:, 0], 2 * s[:, 1]])


OBS = np.array([[0.5, 1.0], [-1.0, 2.0], [0.0, 0.0]], np.float32)
ACT = np.array([[0.3], [-0.2], [1.0]], np.float32)


@pytest.mark.parametrize("k", [0, 1, 4])
def test_rollout_and_answer_are_exact(k):
    delta = np.array([0.1, -0.2], np.float32)
    e = expand(drift_model(delta), policy, OBS, ACT, k)
    assert e.horizon == k and e.alive.shape == (k + 1, 3) and np.all(e.alive == 1)
    np.testing.assert_allclose(e.obs, OBS + k * delta, atol=1e-6)
    np.testing.assert_allclose(e.action, -(OBS + k * delta)[:, :1] if k else ACT, atol=1e-6)
    if k:
        np.testing.assert_allclose(e.steps[0]["action"], ACT)      # the query's own first action
    if k > 1:
        np.testing.assert_allclose(e.steps[1]["action"], policy(OBS + delta), atol=1e-6)   # then pi's
    q = expanded_q(e, height, bootstrap, GAMMA)
    head = sum(GAMMA ** t * (OBS[:, 0] + t * delta[0]) for t in range(k))
    want = head + GAMMA ** k * bootstrap(OBS + k * delta, e.action)
    np.testing.assert_allclose(q, want, rtol=1e-5, atol=1e-5)


def test_termination_discounts_the_rest():
    e = expand(drift_model(np.zeros(2, np.float32), terminated=0.25), policy, OBS, ACT, 3)
    np.testing.assert_allclose(e.alive[:, 0], [1, 0.75, 0.75 ** 2, 0.75 ** 3], rtol=1e-6)
    one = lambda f: np.ones(len(f["obs"]), np.float32)  # noqa: E731
    q = expanded_q(e, one, lambda s, a: np.zeros((1, len(s))), GAMMA)
    np.testing.assert_allclose(q[0], sum((GAMMA * 0.75) ** t for t in range(3)) * np.ones(3), rtol=1e-6)


def test_linear_monotone_and_constant_exact():
    e = expand(drift_model(np.array([0.3, 0.1], np.float32)), policy, OBS, ACT, 5)

    def const(c):
        return lambda f: c * np.ones(len(f["obs"]), np.float32)

    exact = lambda c: lambda s, a: np.full((1, len(s)), c / (1 - GAMMA))  # noqa: E731 - a constant-exact G
    np.testing.assert_allclose(expanded_q(e, const(2.0), exact(2.0), GAMMA), 2.0 / (1 - GAMMA), rtol=1e-6)
    r1, r2 = height, (lambda f: f["obs"][:, 1] ** 2)
    g1, g2 = (lambda s, a: s[None, :, 0]), (lambda s, a: s[None, :, 1] ** 2)
    both = expanded_q(e, lambda f: 2 * r1(f) - 3 * r2(f), lambda s, a: 2 * g1(s, a) - 3 * g2(s, a), GAMMA)
    apart = 2 * expanded_q(e, r1, g1, GAMMA) - 3 * expanded_q(e, r2, g2, GAMMA)
    np.testing.assert_allclose(both, apart, rtol=1e-5, atol=1e-5)
    low, high = expanded_q(e, r2, g2, GAMMA), expanded_q(e, lambda f: r2(f) + 1, lambda s, a: g2(s, a) + 10, GAMMA)
    assert np.all(high >= low)


def test_bad_horizon_and_policy():
    with pytest.raises(ValueError, match="horizon must be >= 0"):
        expand(drift_model(np.zeros(2, np.float32)), policy, OBS, ACT, -1)
    with pytest.raises(ValueError, match="non-finite action"):
        expand(drift_model(np.zeros(2, np.float32)), lambda s: np.full((len(s), 1), np.nan), OBS, ACT, 2)


def test_rollout_stays_in_the_data_range():
    model = drift_model(np.array([1.0, -1.0], np.float32))._replace(low=np.array([-2.0, -2.0], np.float32),
                                                                     high=np.array([2.0, 2.0], np.float32))
    e = expand(model, policy, OBS, ACT, 6)
    np.testing.assert_allclose(e.obs, np.tile([2.0, -2.0], (3, 1)))
    assert all(np.all(np.abs(x["next_obs"]) <= 2.0) for x in e.steps)


def split_ensemble(delta) -> OneStepModel:
    """Two members predicting next_obs = obs + delta on average, apart by +-sqrt(2) relu(s_0) on the
    second state quantity: their disagreement u(s, a) = relu(s_0), exactly."""
    base = drift_model(delta)
    k0, b0 = np.zeros((3, 4), np.float32), np.zeros(4, np.float32)
    k0[0, 0] = 1.0                                     # hidden unit 0 = relu(s_0)
    k1 = np.zeros((2, 4, 2), np.float32)
    k1[:, 0, 1] = [np.sqrt(2), -np.sqrt(2)]
    params = {"params": {"Dense_0": {"kernel": np.stack([k0, k0]), "bias": np.stack([b0, b0])},
                         "Dense_1": {"kernel": k1, "bias": np.zeros((2, 2), np.float32)}}}
    return base._replace(params=params, stop_at=1.0)


def test_a_rollout_stops_where_the_members_disagree():
    """tau = the first step with s_0 > 1; the answer is the model's first tau steps, then G at
    (s_tau, a_tau): the query's own action where tau = 0."""
    delta = np.array([0.3, 0.1], np.float32)
    obs = np.concatenate([OBS, [[1.5, 0.0]]]).astype(np.float32)
    act = np.concatenate([ACT, [[0.7]]]).astype(np.float32)
    model = split_ensemble(delta)
    assert model.members == 2
    e = expand(model, policy, obs, act, 5)
    np.testing.assert_array_equal(e.stop, [2, 5, 4, 0])
    np.testing.assert_allclose(e.obs, obs + e.stop[:, None] * delta, atol=1e-6)
    np.testing.assert_allclose(e.action[3], act[3])
    np.testing.assert_allclose(e.action[:3], -(obs + e.stop[:, None] * delta)[:3, :1], atol=1e-6)
    q = expanded_q(e, height, bootstrap, GAMMA)
    for i, tau in enumerate(e.stop):
        head = sum(GAMMA ** t * (obs[i, 0] + t * delta[0]) for t in range(tau))
        want = head + GAMMA ** tau * bootstrap(e.obs[i:i + 1], e.action[i:i + 1])[:, 0]
        np.testing.assert_allclose(q[:, i], want, rtol=1e-5, atol=1e-5)
    # the stop does not depend on the reward: linear, monotone and constants stay exact
    exact = lambda s, a: np.full((1, len(s)), 2.0 / (1 - GAMMA))  # noqa: E731
    np.testing.assert_allclose(expanded_q(e, lambda f: np.full(len(f["obs"]), 2.0), exact, GAMMA),
                               2.0 / (1 - GAMMA), rtol=1e-6)
    r2, g2 = (lambda f: f["obs"][:, 1] ** 2), (lambda s, a: s[None, :, 1] ** 2)
    both = expanded_q(e, lambda f: height(f) - 3 * r2(f), lambda s, a: bootstrap(s, a) - 3 * g2(s, a), GAMMA)
    np.testing.assert_allclose(both, expanded_q(e, height, bootstrap, GAMMA) - 3 * expanded_q(e, r2, g2, GAMMA),
                               rtol=1e-5, atol=1e-5)
    never = expand(model._replace(stop_at=0.0), policy, obs, act, 5)    # stop_at 0: the full horizon
    np.testing.assert_array_equal(never.stop, 5)
