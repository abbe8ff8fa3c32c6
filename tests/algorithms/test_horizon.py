"""The horizon chosen per reward: the ensemble's spread under pi (exact for members drifting
apart, zero for identical ones), the data's stretches and a single model's error along them
(zero for an exact model, growing for a drifting one, seen by an action-only reward through the
replayed closed loop), and the rule's exact choices."""
import numpy as np
import pytest
from onestep_models import drift_model, ensemble

from resolvent.algorithms.expansion import expand
from resolvent.algorithms.horizon import choose, find_stretches, member_spread, model_errors, point_spread, validate

GAMMA = 0.9
DELTA = np.array([0.1, -0.05], np.float32)


def policy(obs):
    return -obs[:, :1]                                   # pi(s) = -s_0


def episode(start, steps: int, noise, terminate: bool = False) -> dict:
    """A stretch of data under s' = s + DELTA, actions pi(s) + noise."""
    s = np.asarray(start, np.float32) + DELTA * np.arange(steps + 1)[:, None]     # (steps + 1, 2)
    a = policy(s[:-1]) + noise[:steps, None]
    term = np.zeros(steps, np.float32)
    term[-1] = float(terminate)
    return {"obs": s[:-1], "action": a.astype(np.float32), "next_obs": s[1:], "terminated": term}


def dataset(noise, terminate: bool = True) -> dict:
    """Three episodes: 12 steps truncated, 5 steps ending in a termination (or truncated), 12
    steps truncated."""
    parts = [episode([0.0, 1.0], 12, noise), episode([3.0, -1.0], 5, noise, terminate=terminate),
             episode([-2.0, 0.5], 12, noise[5:])]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def test_stretches_follow_the_data_and_stop_at_its_ends():
    data = dataset(np.zeros(20, np.float32))
    st = find_stretches(data, length=8, count=100, seed=0)
    assert st.length == 8
    f = st.features
    live = st.alive > 0                                                            # (L, S)
    np.testing.assert_allclose(f["next_obs"][:-1][live[1:]], f["obs"][1:][live[1:]])   # each continues the last
    ended = ~live.all(0)                                   # the ones padded after their termination
    assert ended.any() and np.all(f["terminated"][live.sum(0)[ended] - 1, np.flatnonzero(ended)] == 1)
    assert st.features["obs"].shape[1] == (12 - 8 + 1) * 2 + 5   # truncated episodes: only full stretches
    long = find_stretches(data, length=50, count=100, seed=0)   # only a terminated stretch is that long
    assert long.length == 50 and long.features["obs"].shape[1] == 5
    assert find_stretches(dataset(np.zeros(20, np.float32), terminate=False), 50, 100, 0).length == 12   # the longest
    lone = {k: v[[0, 5, 10]] for k, v in data.items()}                         # no transition follows another
    assert find_stretches(lone, 8, 10, 0) is None


def test_an_exact_model_has_no_error_and_a_drifting_one_grows():
    rng = np.random.default_rng(0)
    data = dataset(rng.normal(0, 0.3, 20).astype(np.float32), terminate=False)   # the model has no termination
    st = find_stretches(data, length=10, count=50, seed=1)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    effort = lambda f: f["action"][:, 0] ** 2  # noqa: E731
    exact = validate(drift_model(DELTA), policy, st)
    for r in (height, effort):
        np.testing.assert_allclose(model_errors(exact, st, r, (0, 1, 5, 10, 30), GAMMA), 0.0, atol=1e-9)
    drifting = validate(drift_model(DELTA + np.array([0.05, 0.0], np.float32)), policy, st)
    for r in (height, effort):        # an action-only reward sees the drift through pi at the model's state
        e = model_errors(drifting, st, r, (0, 2, 5, 10, 30), GAMMA)
        assert e[0] == 0 and np.all(np.diff(e[:4]) > 0) and e[4] == e[3]   # as at L beyond the stretches


@pytest.mark.parametrize("e_op,want", [(0.0, 0), (1e6, 400), (2.0, 10)])
def test_the_rule_balances_the_model_against_the_operator(e_op, want):
    horizons = (0, 10, 30, 400)
    e_model = np.array([0.0, 0.1, 5.0, 50.0])
    assert choose(e_model, e_op, horizons, 0.99) == want


def test_the_members_spread_under_pi_is_exact():
    """Two members drifting apart by eps a step in s_0: height's spread over the first k steps is
    ((h_1 - h_2) / 2)^2 = (eps / 2 sum_{t<k} gamma^t t)^2 at every point, as at the rollout's end
    beyond it; identical members, one kept member and k = 0 have none; an action-only reward
    sees the drift from the second step on, through pi at the members' states."""
    eps, k_max = 0.05, 30
    obs = np.array([[0.0, 1.0], [2.0, -1.0], [-1.0, 0.5]], np.float32)
    horizons = (0, 1, 5, 10, 30, 50)
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    apart = expand(ensemble([DELTA, DELTA + np.array([eps, 0.0], np.float32)], keep=0), policy, obs, policy(obs), k_max)
    t = np.arange(k_max)
    want = [(eps / 2 * (GAMMA ** t[:min(k, k_max)] * t[:min(k, k_max)]).sum()) ** 2 for k in horizons]
    np.testing.assert_allclose(member_spread(apart, height, horizons, GAMMA), want, rtol=1e-4, atol=1e-12)
    effort = lambda f: f["action"][:, 0] ** 2  # noqa: E731
    e = member_spread(apart, effort, horizons, GAMMA)
    assert e[0] == e[1] == 0 and np.all(np.diff(e[1:5]) > 0)   # the first action is the query's own
    same = expand(ensemble([DELTA, DELTA, DELTA], keep=0), policy, obs, policy(obs), k_max)
    lone = expand(ensemble([DELTA, DELTA + np.array([eps, 0.0], np.float32)], keep=1), policy, obs, policy(obs), k_max)
    for exp in (same, lone):
        np.testing.assert_allclose(member_spread(exp, height, horizons, GAMMA), 0.0, atol=1e-12)
    # at some points only, the reward evaluated there alone: those points' spreads, point by point
    product = lambda f: f["obs"][:, 0] * f["obs"][:, 1]  # noqa: E731 - a spread that differs by point
    every = point_spread(apart, product, horizons, GAMMA)                          # (K, 3)
    assert len(np.unique(every[-1].round(6))) == 3
    np.testing.assert_allclose(point_spread(apart, product, horizons, GAMMA, np.array([2, 0])), every[:, [2, 0]],
                               rtol=1e-6, atol=1e-12)
