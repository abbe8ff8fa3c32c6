from dataclasses import replace

import numpy as np
import pytest

from resolvent.algorithms.bank import Bank, BankConfig, bank_starts, episode_starts
from resolvent.algorithms.expansion import expand, expanded_q
from onestep_models import drift_model, goal_model, split_model


def episodes(lengths: list[int], ds: int = 2, seed: int = 0) -> dict:
    """Transitions stored episode by episode: next_obs of a step is obs of the next in its episode."""
    rng = np.random.default_rng(seed)
    obs, nxt = [], []
    for n in lengths:
        s = rng.normal(size=(n + 1, ds)).astype(np.float32)
        obs.append(s[:-1])
        nxt.append(s[1:])
    return {"obs": np.concatenate(obs), "next_obs": np.concatenate(nxt)}


def test_episode_starts_are_where_a_step_does_not_follow_the_last():
    data = episodes([4, 3, 5])
    np.testing.assert_array_equal(episode_starts(data["obs"], data["next_obs"]), [0, 4, 7])


def test_bank_starts_take_the_episodes_first_states_then_others():
    data = episodes([4, 3, 5, 6])
    starts = bank_starts(data, BankConfig(points=8, starts=0.5), seed=0)
    assert starts.shape == (8, 2) and len(np.unique(starts, axis=0)) == 8          # no state twice
    firsts = data["obs"][[0, 4, 7, 12]]
    assert all(any(np.array_equal(f, s) for s in starts) for f in firsts)            # all four first states
    few = bank_starts(data, BankConfig(points=8, starts=0.25), seed=0)               # two of them
    assert sum(any(np.array_equal(f, s) for s in few) for f in firsts) >= 2
    np.testing.assert_array_equal(bank_starts(data, BankConfig(points=8), seed=0), starts)   # same seed, same states
    with pytest.raises(ValueError, match="more than the dataset's 18 transitions"):
        bank_starts(data, BankConfig(points=19), seed=0)


def test_the_default_bank_is_made_under_auto_only():
    """points -1 (EvaluateConfig's default): 2048 states under method auto, at most the data's
    transitions, and none otherwise; a number given stays as given."""
    auto = BankConfig(points=-1, reach=0.2)
    assert auto.resolve(True, 100_000) == BankConfig(points=2048, reach=0.2)
    assert auto.resolve(True, 1500).points == 1500 and auto.resolve(False, 100_000).points == 0
    assert BankConfig(points=64).resolve(False, 10).points == 64 and BankConfig().resolve(True, 10).points == 0


@pytest.mark.parametrize("bad, why", [(dict(points=-2), "points must be >= 0"),
                                      (dict(points=4, steps=0), "steps must be 1 to"),
                                      (dict(points=4, horizon=10, steps=10), "steps must be 1 to"),
                                      (dict(neighbours=0), "neighbours must be >= 1"),
                                      (dict(starts=1.5), "a share of the points"),
                                      (dict(eps=-0.1), "eps must be >= 0"),
                                      (dict(reach=-1.0), "reach must be >= 0"),
                                      (dict(least=0), "least must be >= 1"),
                                      (dict(agree=-0.1), "agree must be >= 0"),
                                      (dict(agree_spread=-1.0), "agree_spread must be >= 0"),
                                      (dict(actions=-1.0), "actions must be >= 0")])
def test_bank_config_refuses_what_it_cannot_do(bad, why):
    with pytest.raises(ValueError, match=why):
        BankConfig(**bad)


def test_a_bank_of_fewer_states_than_neighbours_answers_from_all_of_them():
    """s_t = s_0 + 0.1 t (one member): two starting states, bank states after steps 1 and 2 (four
    of them, fewer than the 8 neighbours asked); a bank state's own value is the rest of its
    rollout, sum_{t<K} gamma^(t-j) r(x_t) + gamma^(K-j) G, and every answer is finite."""
    bank = Bank(BankConfig(points=2, horizon=4, steps=2, neighbours=8), np.zeros((2, 2), np.float32))
    bank.starts[1] = 1.0
    bank.build(drift_model(np.array([0.1, 0.1], np.float32)), lambda s: np.zeros((len(s), 1), np.float32))
    assert len(bank) == 4
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    g = lambda s, a: np.stack([np.zeros(len(s)), np.ones(len(s))])  # noqa: E731 - two seeds: G = 0, G = 1
    v = bank.tail(height, g, 0.9)(bank.states, None)                             # (2, 4)
    s1 = bank.states[0, 0]                                                          # the first state after step 1
    want = [sum(0.9 ** u * (s1 + 0.1 * u) for u in range(3)) + 0.9 ** 3 * seed for seed in (0, 1)]
    np.testing.assert_allclose(v[:, 0], want, rtol=1e-5)
    assert np.all(np.isfinite(bank.tail(height, g, 0.9)(np.full((3, 2), 5.0, np.float32), None)))


def test_the_nearest_bank_states_by_state_and_pis_action_share_pis_action():
    """pi jumps across s_1 = 0 (a = +1 above, -1 below) and the reward is the action: two bank
    rollouts drift along s_0 at s_1 = -0.01 (every value negative) and s_1 = +0.03 (positive).
    At s = (0.35, 0.005), where pi's action is +1, the two nearest by state alone are the first
    rollout's (0.3, -0.01) and (0.4, -0.01): a value of the wrong sign. Searched over (s, pi(s))
    (``actions`` = 1) they are the second's, and the answer is their own values' mean, in the
    states found without asking pi; linear, a constant exact."""
    pi = lambda s: np.where(s[:, 1:2] > 0, 1.0, -1.0).astype(np.float32)  # noqa: E731
    starts = np.array([[0.0, -0.01], [0.0, 0.03]], np.float32)
    reward = lambda f: f["action"][:, 0]  # noqa: E731
    g = lambda s, a: np.zeros((1, len(s)))  # noqa: E731 - the operator after step K: 0
    query = np.array([[0.35, 0.005]], np.float32)
    answers = {}
    for a in (0.0, 1.0):
        bank = Bank(BankConfig(points=2, horizon=12, steps=8, neighbours=2, eps=0.0, actions=a), starts)
        bank.build(drift_model(np.array([0.1, 0.0], np.float32)), pi)
        answers[a] = bank.tail(reward, g, 0.9)(query, pi(query))[0, 0]
        i, w = bank.neighbours_of(query)                                              # pi asked by the bank
        np.testing.assert_array_equal(i, bank.neighbours_of(query, pi(query))[0])
        assert np.allclose(w.sum(1), 1.0) and np.all(w >= 0)
    assert answers[0.0] < 0 < answers[1.0]
    i, w = bank.neighbours_of(query)
    assert np.all(bank.states[i[0], 1] > 0)                                          # the second rollout's
    v = bank.values(reward, g, 0.9)                                                   # (1, B)
    np.testing.assert_allclose(answers[1.0], (v[0, i[0]] * w[0]).sum(), rtol=1e-6)
    c = lambda f: np.full(len(f["obs"]), 2.0)  # noqa: E731
    exact = lambda s, a: np.full((1, len(s)), 20.0)  # noqa: E731 - G[c] = c / (1 - gamma)
    np.testing.assert_allclose(bank.tail(c, exact, 0.9)(query, pi(query)), 20.0, rtol=1e-6)
    combo = lambda f: 3.0 * f["action"][:, 0] - 2.0 * f["obs"][:, 0]  # noqa: E731
    height = lambda f: f["obs"][:, 0]  # noqa: E731
    at = lambda r: bank.tail(r, g, 0.9)(query, pi(query))  # noqa: E731
    np.testing.assert_allclose(at(combo), 3.0 * at(reward) - 2.0 * at(height), rtol=1e-5)


def test_a_bank_whose_rollouts_all_end_at_once_says_so():
    rule = lambda f: np.ones(len(f["obs"]), np.float32)  # noqa: E731 - every transition ends
    bank = Bank(BankConfig(points=3, horizon=4, steps=2), np.zeros((3, 1), np.float32))
    with pytest.raises(ValueError, match="the bank has no states"):
        bank.build(goal_model(np.array([0.3], np.float32), -1.0, 10.0, rule), lambda s: np.zeros_like(s))


def test_a_point_stops_rolling_where_the_bank_reaches_it():
    """reach: a point rolls until its state lies within reach x the bank's step of the bank, after
    ``least`` steps at least; one the bank never reaches rolls all k. The bank's states are
    s_t = (0.1 t, 0), t = 1..20 (step 0.1): from (-0.3, 0) the rollout meets it at t = 4, from
    (0.5, 0) at once (stopped at least = 2), from (0.05, 1) never; each answer is the bank's after
    the point's own number of steps, and a constant is exact."""
    model, pi0 = drift_model(np.array([0.1, 0.0], np.float32)), lambda s: np.zeros((len(s), 1), np.float32)
    bank = Bank(BankConfig(points=1, horizon=40, steps=20, neighbours=1, eps=0.0, reach=0.5, least=2),
                np.zeros((1, 2), np.float32)).build(model, pi0)
    assert len(bank) == 20 and bank.step == pytest.approx(0.1)
    obs = np.array([[-0.3, 0.0], [0.5, 0.0], [0.05, 1.0]], np.float32)
    act = np.zeros((3, 1), np.float32)
    ex = expand(model, pi0, obs, act, 10, bank.until(0.9))
    np.testing.assert_array_equal(ex.ends, [4, 2, 10])
    np.testing.assert_array_equal(ex.repeats.first, [5, 3, 10])     # a stopped point's later steps copy its k_i-th
    height = lambda f: f["obs"][:, 0] + f["obs"][:, 1]  # noqa: E731
    g = lambda s, a: np.stack([np.zeros(len(s)), np.ones(len(s))])  # noqa: E731 - two seeds: G = 0, G = 1
    q = expanded_q(ex, height, bank.tail(height, g, 0.9), 0.9)                       # (2, 3)
    for i, k in enumerate(ex.ends):
        alone = expand(model, pi0, obs[i:i + 1], act[i:i + 1], int(k))
        np.testing.assert_allclose(q[:, i], expanded_q(alone, height, bank.tail(height, g, 0.9), 0.9)[:, 0], rtol=1e-6)
    c = lambda f: np.full(len(f["obs"]), 3.0)  # noqa: E731
    exact = lambda s, a: np.full((1, len(s)), 30.0)  # noqa: E731 - G[c] = c / (1 - gamma)
    np.testing.assert_allclose(expanded_q(ex, c, bank.tail(c, exact, 0.9), 0.9), 30.0, rtol=1e-6)


def test_a_point_does_not_stop_where_its_nearest_bank_states_go_different_ways():
    """agree: the closed loop (x, y) -> (x + 0.1, 2 y) splits at y = 0. The bank rolls out from
    (0, +-0.001): its states (0.1 t, +-0.001 2^t) lie a hundredth of a step apart for the first
    steps, then part. A point on y = 0 stays there (|y| pays nothing along its own rollout), and
    its two nearest bank states are one of each side: stopped there at step 2 (no agree) it answers
    by their mean, |y| paid on both sides after 2 steps; with their futures compared it rolls all
    k = 10 steps, |y| = 0 along them, and answers as it does without a stop rule. The futures are
    the discounted mean states ahead, as written."""
    model, pi0 = split_model(), lambda s: np.zeros((len(s), 1), np.float32)
    cfg = BankConfig(points=2, horizon=20, steps=8, neighbours=2, eps=0.0, reach=0.5, least=2, agree_spread=0.0)
    starts = np.array([[0.0, 0.001], [0.0, -0.001]], np.float32)
    obs, act = np.array([[0.2, 0.0]], np.float32), np.zeros((1, 1), np.float32)
    size = lambda f: np.abs(f["obs"][:, 1])  # noqa: E731 - |y|
    nothing = lambda s, a: np.zeros((1, len(s)))  # noqa: E731 - the operator's tail: G[|y|] = 0 on y = 0
    answers = {}
    for agree in (0.0, 0.03):
        bank = Bank(replace(cfg, agree=agree), starts).build(model, pi0)
        ex = expand(model, pi0, obs, act, 10, bank.until(0.9))
        answers[agree] = (int(ex.ends[0]), float(expanded_q(ex, size, bank.tail(size, nothing, 0.9), 0.9)[0, 0]))
    bank = Bank(cfg, starts).build(model, pi0)
    every = expanded_q(expand(model, pi0, obs, act, 10), size, bank.tail(size, nothing, 0.9), 0.9)[0, 0]
    assert answers[0.0][0] == 2 and answers[0.0][1] > 0.1                             # the mean over both sides
    assert answers[0.03][0] == 10 and answers[0.03][1] == pytest.approx(every, rel=1e-6)
    f = bank.futures(0.9).reshape(cfg.steps, 2, 2)                                    # (T, m P, ds)
    y = 0.001 * 2.0 ** np.arange(1, 20)                                               # the + side's y_1..y_19
    for t in (1, 4, 8):
        w = 0.9 ** np.arange(20 - t)
        np.testing.assert_allclose(f[t - 1, 0, 1], (w * y[t - 1:]).sum() / w.sum(), rtol=1e-5)
        np.testing.assert_allclose(f[t - 1, 1, 1], -f[t - 1, 0, 1], rtol=1e-6)
    assert bank.until(0.9) is bank.until(0.9)                     # one rule: the rollouts cache reads it


def test_the_tolerance_in_the_banks_own_scale_is_its_spread_times_agree_spread():
    """agree_spread c: the futures' tolerance is c x Bank.spread, the 99% quantile over the bank
    states of how far their nearest bank states' futures lie from their mean at most (written out
    here by brute force); a rollout with it stops and answers as one with agree = c x spread."""
    model, pi0 = split_model(), lambda s: np.zeros((len(s), 1), np.float32)
    cfg = BankConfig(points=2, horizon=20, steps=8, neighbours=2, eps=0.0, reach=0.5, least=2)
    starts = np.array([[0.0, 0.001], [0.0, -0.001]], np.float32)
    obs = np.array([[0.2, 0.0], [0.3, 0.05], [0.1, -0.3]], np.float32)
    act = np.zeros((3, 1), np.float32)
    size = lambda f: np.abs(f["obs"][:, 1])  # noqa: E731 - |y|
    nothing = lambda s, a: np.zeros((1, len(s)))  # noqa: E731
    bank = Bank(cfg, starts).build(model, pi0)
    path, f = bank.path[bank.rows], bank.futures(0.9)[bank.rows]                       # (B, ds) each
    near = np.argsort(((path[:, None] - path[None]) ** 2).sum(-1), 1, kind="stable")[:, :2]   # (B, N)
    each = np.linalg.norm(f[near] - f[near].mean(1, keepdims=True), axis=-1).max(1)   # (B,)
    spread = bank.spread(0.9)
    assert spread == pytest.approx(np.quantile(each, 0.99), rel=1e-5) and spread > 0
    for c in (0.01, 0.3, 3.0):
        runs = []
        for agree in (dict(agree_spread=c), dict(agree=c * spread)):
            b = Bank(replace(cfg, **agree), starts).build(model, pi0)
            ex = expand(model, pi0, obs, act, 10, b.until(0.9))
            runs.append((ex.ends.copy(), expanded_q(ex, size, b.tail(size, nothing, 0.9), 0.9)))
        np.testing.assert_array_equal(runs[0][0], runs[1][0])
        np.testing.assert_array_equal(runs[0][1], runs[1][1])
