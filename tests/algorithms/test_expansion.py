"""The model-based expansion G_k: exact answers with a one-step model whose rollout is known,
and the operator's exact properties kept (linear, monotone, constants)."""
from dataclasses import replace

import jax
import numpy as np
import pytest
from numpy._core import multiarray

from resolvent.algorithms import expansion, onestep
from resolvent.algorithms.expansion import (STATES, Buffers, Repeats, Rollouts, along_q, chunks, expand,
                                            expanded_q, rollout_bytes)
from resolvent.algorithms.horizon import point_spread
from resolvent.rewards import probes
from onestep_models import action_model, drift_model, ensemble, goal_ensemble, goal_model

GAMMA = 0.9


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
        np.testing.assert_allclose(e.steps["action"][0], ACT)      # the query's own first action
    if k > 1:
        np.testing.assert_allclose(e.steps["action"][1], policy(OBS + delta), atol=1e-6)   # then pi's
    q = expanded_q(e, height, bootstrap, GAMMA)
    head = sum(GAMMA ** t * (OBS[:, 0] + t * delta[0]) for t in range(k))
    want = head + GAMMA ** k * bootstrap(OBS + k * delta, e.action)
    np.testing.assert_allclose(q, want, rtol=1e-5, atol=1e-5)


def test_the_model_steps_at_the_dynamics_actions_and_every_reward_reads_the_rollouts_own():
    """``dynamics`` changes the action the one-step model steps at, not the one the step holds:
    with s_{t+1} = s_t + a_t and dynamics a -> 0 the states stay where they started while every
    step's action is still the query's, then pi's; the identity is the plain rollout."""
    obs, act = OBS[:, :1], ACT
    pi = lambda s: -2 * s  # noqa: E731
    still = expand(action_model([[0.0]]), pi, obs, act, 3, dynamics=lambda s, a: np.zeros_like(a))
    for t in range(3):
        np.testing.assert_allclose(still.steps["obs"][t], obs)
    np.testing.assert_allclose(still.steps["action"][0], act)
    np.testing.assert_allclose(still.steps["action"][2], pi(obs))
    effort = lambda f: -f["action"][:, 0] ** 2  # noqa: E731
    q = expanded_q(still, effort, lambda s, a: np.zeros((1, len(s))), GAMMA)
    np.testing.assert_allclose(q[0], -act[:, 0] ** 2 - (GAMMA + GAMMA ** 2) * pi(obs)[:, 0] ** 2, rtol=1e-5)
    plain = expand(action_model([[0.0]]), pi, obs, act, 3)
    same = expand(action_model([[0.0]]), pi, obs, act, 3, dynamics=lambda s, a: a)
    assert_same_rollout(same, plain)
    two = action_model([[0.0], [0.1]])                                  # two members, the points of steer alone
    one = expand(two, pi, obs, act, 3, dynamics=lambda s, a: np.zeros_like(a), steer=np.array([False, True, False]))
    whole = expand(two, pi, obs, act, 3)
    rows = np.array([1, 4])                                             # point 1 in each member's rows
    np.testing.assert_allclose(one.steps["obs"][2][rows], obs[[1, 1]] + [[0.0], [0.2]], atol=1e-6)   # offsets only
    others = np.array([0, 2, 3, 5])
    np.testing.assert_allclose(one.steps["obs"][2][others], whole.steps["obs"][2][others], atol=1e-6)
    with pytest.raises(ValueError, match="steer must mark each of the 3 points once"):
        expand(two, pi, obs, act, 3, dynamics=lambda s, a: a, steer=np.array([True, False]))


def test_termination_discounts_the_rest():
    e = expand(drift_model(np.zeros(2, np.float32), terminated=0.25), policy, OBS, ACT, 3)
    np.testing.assert_allclose(e.alive[:, 0], [1, 0.75, 0.75 ** 2, 0.75 ** 3], rtol=1e-6)
    one = lambda f: np.ones(len(f["obs"]), np.float32)  # noqa: E731
    q = expanded_q(e, one, lambda s, a: np.zeros((1, len(s))), GAMMA)
    np.testing.assert_allclose(q[0], sum((GAMMA * 0.75) ** t for t in range(3)) * np.ones(3), rtol=1e-6)


def test_a_termination_rule_ends_the_rollout_where_it_crosses_and_pays_once():
    """s_t = 0.3 t from 0 under a split model: the step from 0.9 to 1.2 crosses the goal (1), the
    rule ends it there, and a goal indicator is paid once, at that step; the stored reward pays
    its going-on part before and its ending part then; nothing after, and no tail."""
    rule = lambda f: (f["next_obs"][:, 0] >= 1.0).astype(np.float32)  # noqa: E731
    obs, act = np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32)
    e = expand(goal_model(np.array([0.3], np.float32), -1.0, 10.0, rule), lambda s: np.zeros_like(s), obs, act, 8)
    np.testing.assert_array_equal(e.alive[:, 0], [1, 1, 1, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(e.steps["terminated"][:, 0], [0, 0, 0, 1, 1, 1, 1, 1])
    tail = lambda s, a: np.full((1, len(s)), 1e6)  # noqa: E731 - never reached: the episode ended
    goal = expanded_q(e, rule, tail, GAMMA)
    np.testing.assert_allclose(goal, [[GAMMA ** 3]], rtol=1e-6)
    stored = expanded_q(e, lambda f: f["reward"], tail, GAMMA)
    np.testing.assert_allclose(stored, [[-1 - GAMMA - GAMMA ** 2 + 10 * GAMMA ** 3]], rtol=1e-6)
    # another rule on the same fitted model is another rollout, not the one kept for the first
    model, rollouts = goal_model(np.array([0.3], np.float32), -1.0, 10.0, rule), Rollouts()
    zero = lambda s: np.zeros_like(s)  # noqa: E731
    assert rollouts.get(model, zero, obs, act, 8).alive[4, 0] == 0
    later = model._replace(terminal=lambda f: (f["next_obs"][:, 0] >= 1.5).astype(np.float32))
    np.testing.assert_array_equal(rollouts.get(later, zero, obs, act, 8).alive[:, 0], [1, 1, 1, 1, 1, 0, 0, 0, 0])


def test_a_point_whose_every_member_has_ended_stops_and_its_distances_stop_growing(monkeypatch):
    """Members drifting 0.3, 0.25 and 0.5 a step towards a goal at 1 that ends the episode, from
    0, 0.5 and -3: the model is called until the last point's last member ends (step 16); with
    batches of any size each point stops at the step its own last member ends (4, 2 and 16) and
    repeats it from there, with batches padded to the 3 points the ended ones roll on as padding
    until none rolls; either way its members' distances are sums over the steps before it alone,
    and each member pays the goal indicator once and the stored reward as it goes, as with every
    step modelled."""
    rule = lambda f: (f["next_obs"][:, 0] >= 1.0).astype(np.float32)  # noqa: E731
    d = np.array([0.3, 0.25, 0.5])
    model = goal_ensemble(d[:, None], -1.0, 10.0, rule)._replace(keep=0)
    obs, zero = np.array([[0.0], [0.5], [-3.0]], np.float32), lambda s: np.zeros_like(s)  # noqa: E731
    rows = counted_steps(monkeypatch)
    padded = expand(model, zero, obs, np.zeros((3, 1), np.float32), 30)
    assert rows == [9] * 16 and np.all(padded.repeats.first == 17)                 # 3 members a point
    rows.clear()
    monkeypatch.setattr(expansion, "FEWEST_ROWS", 1)
    ex = expand(model, zero, obs, np.zeros((3, 1), np.float32), 30)
    ends = np.array([4, 2, 16])                                          # the step each point's last member ends
    assert rows == [9, 9, 6, 6] + [3] * 12
    np.testing.assert_array_equal(ex.repeats.first.reshape(3, 3), np.broadcast_to(ends + 1, (3, 3)))
    np.testing.assert_array_equal(padded.apart, ex.apart)
    np.testing.assert_array_equal(padded.alive, ex.alive)
    crossed = np.ceil((1.0 - obs[:, 0]) / d[:, None]).astype(int) - 1    # (E, n) the step each member crosses at
    np.testing.assert_array_equal(ex.alive.reshape(31, 3, 3).argmin(0), crossed + 1)
    gap = np.abs(d[:, None] - d[None]).sum(1)                            # (E,) sum_e' |d_e - d_e'|: s^e_t - s^e'_t
    paid = np.minimum(np.arange(31)[:, None], ends - 1)                  # (k + 1, n) the last step counted by j
    want = gap[None, :, None] * (paid * (paid + 1) / 2)[:, None, :]      # sum_{t <= paid} t |d_e - d_e'|
    np.testing.assert_allclose(ex.apart, want, rtol=1e-5)
    tail = lambda s, a: np.full((1, len(s)), 1e6)  # noqa: E731 - never reached: every episode ended
    np.testing.assert_allclose(expanded_q(ex, rule, tail, GAMMA)[0], (GAMMA ** crossed).mean(0), rtol=1e-6)
    stored = (-(1 - GAMMA ** crossed) / (1 - GAMMA) + 10 * GAMMA ** crossed).mean(0)
    np.testing.assert_allclose(expanded_q(ex, lambda f: f["reward"], tail, GAMMA)[0], stored, rtol=1e-5)


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


def test_the_answers_along_a_rollout_are_the_rest_of_it():
    """along_q at x_t of a k-step rollout, every member alone, is G_{k-t} expanded afresh from that
    member's (s_t, pi(s_t)); with termination, the rest given alive at t; t = 0 is the member's G_k."""
    d = np.array([0.2, -0.1], np.float32)
    model = ensemble([d, -d, 3 * d], keep=2)
    k, at = 6, (0, 1, 4, 5)
    e = expand(model, policy, OBS, ACT, k)
    q = along_q(e, height, bootstrap, GAMMA, at)                                       # (2, T, 3 n)
    assert q.shape == (2, len(at), 9)
    for i, t in enumerate(at):
        x = {key: v[t] for key, v in e.steps.items()}
        for m, dm in enumerate([d, -d, 3 * d]):
            rows = slice(3 * m, 3 * m + 3)
            fresh = expanded_q(expand(drift_model(dm), policy, x["obs"][rows], x["action"][rows], k - t),
                               height, bootstrap, GAMMA)
            np.testing.assert_allclose(q[:, i, rows], fresh, rtol=1e-5, atol=1e-5)
    w = e.weights
    np.testing.assert_allclose((q[:, 0].reshape(2, 3, 3) * w).sum(1), expanded_q(e, height, bootstrap, GAMMA),
                               rtol=1e-6)
    ended = expand(drift_model(np.zeros(2, np.float32), terminated=0.5), policy, OBS, ACT, 3)
    one = lambda f: np.ones(len(f["obs"]), np.float32)  # noqa: E731
    rest = along_q(ended, one, lambda s, a: np.zeros((1, len(s))), GAMMA, (0, 2))
    np.testing.assert_allclose(rest[0, 1], np.ones(3), rtol=1e-6)                      # the last step alone
    np.testing.assert_allclose(rest[0, 0], 1 + GAMMA * 0.5 + (GAMMA * 0.5) ** 2, rtol=1e-6)
    with pytest.raises(ValueError, match="rollout steps of a 6-step expansion are 0 to 5"):
        along_q(e, height, bootstrap, GAMMA, (6,))


def test_bad_horizon_and_policy():
    with pytest.raises(ValueError, match="horizon must be >= 0"):
        expand(drift_model(np.zeros(2, np.float32)), policy, OBS, ACT, -1)
    with pytest.raises(ValueError, match="non-finite action"):
        expand(drift_model(np.zeros(2, np.float32)), lambda s: np.full((len(s), 1), np.nan), OBS, ACT, 2)


@pytest.mark.parametrize("before", [True, False])
def test_the_rollout_makes_its_arrays_in_ordinary_pages_and_restores_numpys_switch(before):
    """numpy's mark for transparent huge pages is off while the model rolls out (its arrays made
    in ordinary pages: no compaction on the spot) and is what it was after it, also when the
    rollout fails."""
    seen = []

    def actor(s):
        seen.append(multiarray._get_madvise_hugepage())
        return policy(s)

    was = multiarray._set_madvise_hugepage(before)
    try:
        expand(drift_model(np.zeros(2, np.float32)), actor, OBS, ACT, 3)
        assert seen == [False, False] and multiarray._get_madvise_hugepage() is before
        with pytest.raises(ValueError, match="non-finite action"):
            expand(drift_model(np.zeros(2, np.float32)), lambda s: np.full((len(s), 1), np.nan), OBS, ACT, 2)
        assert multiarray._get_madvise_hugepage() is before
    finally:
        multiarray._set_madvise_hugepage(was)


def test_rollout_stays_in_the_data_range():
    model = drift_model(np.array([1.0, -1.0], np.float32))._replace(low=np.array([-2.0, -2.0], np.float32),
                                                                     high=np.array([2.0, 2.0], np.float32))
    e = expand(model, policy, OBS, ACT, 6)
    np.testing.assert_allclose(e.obs, np.tile([2.0, -2.0], (3, 1)))
    assert np.all(np.abs(e.steps["next_obs"]) <= 2.0)


def test_an_ensemble_rolls_every_member_and_keeps_the_central_ones():
    """Three members drift by d, d and a runaway 5d: each rolls out on its own; keep = 2 averages
    the two that agree, keep = 0 all three; the weights do not depend on the reward, so linearity
    and the constants hold."""
    d = np.array([0.1, -0.2], np.float32)
    model = ensemble([d, d * 1.1, 5 * d], keep=2)
    assert model.members == 3
    k = 4
    e = expand(model, policy, OBS, ACT, k)
    assert e.obs.shape == (9, 2) and e.weights.shape == (3, 3)
    for m, dm in enumerate([d, d * 1.1, 5 * d]):
        np.testing.assert_allclose(e.obs[3 * m:3 * m + 3], OBS + k * dm, atol=1e-5)
    np.testing.assert_allclose(e.weights, [[0.5] * 3, [0.5] * 3, [0.0] * 3])
    one_member = lambda dm: expanded_q(expand(drift_model(dm), policy, OBS, ACT, k), height, bootstrap, GAMMA)  # noqa: E731
    q = expanded_q(e, height, bootstrap, GAMMA)
    np.testing.assert_allclose(q, (one_member(d) + one_member(d * 1.1)) / 2, rtol=1e-5, atol=1e-5)
    every = expanded_q(expand(model._replace(keep=0), policy, OBS, ACT, k), height, bootstrap, GAMMA)
    np.testing.assert_allclose(every, (one_member(d) + one_member(d * 1.1) + one_member(5 * d)) / 3,
                               rtol=1e-5, atol=1e-5)
    exact = lambda s, a: np.full((1, len(s)), 2.0 / (1 - GAMMA))  # noqa: E731
    np.testing.assert_allclose(expanded_q(e, lambda f: np.full(len(f["obs"]), 2.0), exact, GAMMA),
                               2.0 / (1 - GAMMA), rtol=1e-6)
    r2, g2 = (lambda f: f["obs"][:, 1] ** 2), (lambda s, a: s[None, :, 1] ** 2)
    both = expanded_q(e, lambda f: height(f) - 3 * r2(f), lambda s, a: bootstrap(s, a) - 3 * g2(s, a), GAMMA)
    np.testing.assert_allclose(both, q - 3 * expanded_q(e, r2, g2, GAMMA), rtol=1e-5, atol=1e-5)


def test_a_prefix_is_the_shorter_rollout():
    """Expansion.prefix(j) of a k-step rollout equals expand(j) (states, actions, survival, the
    members' weights after j steps, answers); Rollouts rolls out only for a longer horizon or new
    points."""
    d = np.array([0.4, -0.3], np.float32)
    model = ensemble([d, d * 1.5, -2 * d], keep=2)._replace(low=np.array([-1.5, -1.5], np.float32),
                                                            high=np.array([1.5, 1.5], np.float32))
    long = expand(model, policy, OBS, ACT, 7)
    for j in (0, 1, 3, 7):
        short, cut = expand(model, policy, OBS, ACT, j), long.prefix(j)
        assert cut.horizon == j
        for field in ("alive", "obs", "action", "apart", "weights"):
            np.testing.assert_array_equal(getattr(cut, field), getattr(short, field), err_msg=field)
        answer = lambda e: expanded_q(e, height, bootstrap, GAMMA)  # noqa: E731
        np.testing.assert_array_equal(answer(cut), answer(short))
    with pytest.raises(ValueError, match="0 to 7 steps"):
        long.prefix(8)
    calls = []

    def counted(s):
        calls.append(len(s))
        return policy(s)

    rollouts = Rollouts()
    first = rollouts.get(model, counted, OBS, ACT, 5)
    assert len(calls) == 5
    np.testing.assert_array_equal(rollouts.get(model, counted, OBS, ACT, 2).obs, first.prefix(2).obs)
    assert rollouts.get(model, counted, OBS, ACT, 5) is first and len(calls) == 5    # no new rollout
    rollouts.get(model, counted, OBS + 0.1, ACT, 2)                                  # new points
    rollouts.get(model, counted, OBS + 0.1, ACT, 4)                                  # a longer horizon
    assert len(calls) == 5 + 2 + 4


def test_buffers_lend_memory_only_where_nothing_holds_it():
    """Buffers.take lends a buffer again once every array made from it is gone (views of views
    included), never while one lives; sets the fill asked; keeps at most its budget of free ones."""
    buffers = Buffers(budget=4096)
    a = buffers.take((8, 16), np.float32, 1.0)                  # 512 bytes
    assert np.all(a == 1.0) and buffers.nbytes() == 512
    view = a[2:].reshape(-1)[::2]                               # a view of a view holds the buffer
    del a
    b = buffers.take((8, 16), np.float32)
    assert not np.shares_memory(b, view) and buffers.nbytes() == 1024
    address = view.base.ctypes.data
    del view
    c = buffers.take((4, 4), np.float64, 0.0)                   # 128 bytes: the smallest free buffer that holds it
    assert c.ctypes.data == address and np.all(c == 0.0) and buffers.nbytes() == 1024
    b[:] = 7.0
    assert np.all(c == 0.0)                                      # apart from the one still lent
    del b, c
    big = buffers.take((1000,), np.float32)                     # 4000 bytes: the free ones beyond the budget go
    assert buffers.nbytes() == 4000
    del big
    huge = buffers.take((2000,), np.float32)                    # over the budget: lent, not kept once free
    del huge
    buffers.take((1,), np.float32)
    assert buffers.nbytes() <= 4096


def test_rollouts_on_buffers_answer_as_fresh_ones():
    """A rollout on the memory of the one dropped before it (``Rollouts``) is the fresh rollout to
    the bit, and a rollout a caller still holds is never written over by the next."""
    d = np.array([0.4, -0.3], np.float32)
    model = ensemble([d, d * 1.5, -2 * d], keep=2)
    rollouts = Rollouts()
    first = rollouts.get(model, policy, OBS, ACT, 6)
    kept = {field: np.copy(getattr(first, field)) for field in ("alive", "apart", "obs")}
    kept_steps = {key: np.copy(v) for key, v in first.steps.items()}
    second = rollouts.get(model, policy, OBS + 0.2, ACT, 6)              # first still held: new memory
    for field in ("alive", "apart", "obs"):
        np.testing.assert_array_equal(getattr(first, field), kept[field])
    for key, v in first.steps.items():
        np.testing.assert_array_equal(v, kept_steps[key])
    held = rollouts.buffers.nbytes()
    del first, second
    for shift in (0.3, 0.4):                                             # the dropped one's memory lent again
        ex = rollouts.get(model, policy, OBS + shift, ACT, 6)
        fresh = expand(model, policy, OBS + shift, ACT, 6)
        assert rollouts.buffers.nbytes() == held > 0
        assert all(any(np.shares_memory(v, b) for b in rollouts.buffers.held) for v in (ex.alive, ex.apart,
                                                                                       *ex.steps.values()))
        for field in ("alive", "apart", "obs", "action"):
            np.testing.assert_array_equal(getattr(ex, field), getattr(fresh, field))
        for key in fresh.steps:
            np.testing.assert_array_equal(ex.steps[key], fresh.steps[key])
        np.testing.assert_array_equal(expanded_q(ex, height, bootstrap, GAMMA), expanded_q(fresh, height, bootstrap,
                                                                                            GAMMA))
        del ex


def test_the_last_reward_is_evaluated_once_along_a_rollout():
    """The last reward evaluated along a rollout is kept for it and its prefixes (kauto chooses a
    horizon on the longest rollout and answers at a prefix from one evaluation); the answers are
    those of a fresh rollout, and another reward, or a longer rollout than the one kept, is
    evaluated anew."""
    d = np.array([0.4, -0.3], np.float32)
    model = ensemble([d, d * 1.5, -2 * d], keep=2)
    long = expand(model, policy, OBS, ACT, 6)
    calls = []

    def counted(f):
        calls.append(len(f["obs"]))
        return height(f)

    full = long.step_rewards(counted, "rollout")                                 # (6, E n)
    np.testing.assert_array_equal(long.prefix(3).step_rewards(counted, "rollout"), full[:3])
    np.testing.assert_array_equal(expanded_q(long.prefix(3), counted, bootstrap, GAMMA),
                                  expanded_q(expand(model, policy, OBS, ACT, 3), height, bootstrap, GAMMA))
    assert calls == [6 * 3 * len(OBS)]                                           # one evaluation
    long.step_rewards(height, "rollout")
    long.prefix(2).step_rewards(counted, "rollout")                              # another was asked since
    long.step_rewards(counted, "rollout")                                        # longer than the one kept
    assert calls == [6 * 3 * len(OBS), 2 * 3 * len(OBS), 6 * 3 * len(OBS)]


def test_a_long_rollout_goes_to_the_reward_in_chunks_of_one_shape(monkeypatch):
    """Along a rollout the reward reads its steps in chunks of about ``REWARD_BYTES`` of inputs,
    all of one length (the last ends at step k, repeating steps of the one before), compiled or
    not as the whole would be: the values are those of one call over every step."""
    d = np.array([0.4, -0.3], np.float32)
    model = ensemble([d, d * 1.5, -2 * d], keep=2)
    rows = 3 * len(OBS)
    whole = expand(model, policy, OBS, ACT, 7).step_rewards(height, "rollout")          # (7, E n)
    row_bytes = sum(v[0, 0].nbytes for v in expand(model, policy, OBS, ACT, 1).steps.values())
    calls = []

    def counted(f):
        calls.append(len(f["obs"]))
        return height(f)

    monkeypatch.setattr(expansion, "REWARD_BYTES", 3 * rows * row_bytes)               # 3 steps a call
    for compile_rows in (1 << 62, 7 * rows):                                        # as written, compiled
        monkeypatch.setattr(probes, "COMPILE_ROWS", compile_rows)
        calls.clear()
        chunked = expand(model, policy, OBS, ACT, 7).step_rewards(counted, "rollout")
        np.testing.assert_allclose(chunked, whole, rtol=1e-6)
        traced = [n for n in calls if n > 2]         # not ``reads``' two-row look at what the reward reads
        assert traced == ([3 * rows] * 3 if compile_rows > 7 * rows else [3 * rows])  # steps 0-2, 3-5, 4-6; one trace
    monkeypatch.setattr(expansion, "REWARD_BYTES", 1)                                 # one step a call at least
    monkeypatch.setattr(probes, "COMPILE_ROWS", 1 << 62)
    calls.clear()
    np.testing.assert_array_equal(expand(model, policy, OBS, ACT, 7).step_rewards(counted, "rollout"), whole)
    assert calls == [rows] * 7


def test_sums_at_are_the_running_discounted_sums():
    """sums_at(steps) is every member's sum_{u<j} gamma^u c_u r(x_u) at each j of steps (any order,
    repeats, 0 and k), from one evaluation of the reward; a step count outside 0..k is refused."""
    d = np.array([0.4, -0.3], np.float32)
    e = expand(ensemble([d, -d, 2 * d], keep=2), policy, OBS, ACT, 6)
    r = e.step_rewards(height, "rollout")                                            # (6, E n)
    running = np.cumsum(GAMMA ** np.arange(6)[:, None] * e.alive[:6] * r, 0)        # (6, E n)
    want = np.concatenate([np.zeros((1, r.shape[1])), running])                      # (7, E n): j = 0..6
    steps = [6, 0, 2, 2, 5, 1]
    np.testing.assert_allclose(e.sums_at(height, GAMMA, "rollout", steps), want[steps], rtol=1e-12, atol=1e-12)
    dying = expand(drift_model(d, terminated=0.3), policy, OBS, ACT, 4)
    live = np.cumsum(GAMMA ** np.arange(4)[:, None] * dying.alive[:4] * dying.step_rewards(height, "r"), 0)
    np.testing.assert_allclose(dying.sums_at(height, GAMMA, "r", [4, 3]), live[[3, 2]], rtol=1e-12)
    assert e.prefix(0).sums_at(height, GAMMA, "rollout", [0]).shape == (1, r.shape[1])
    with pytest.raises(ValueError, match="0 to 6, got"):
        e.sums_at(height, GAMMA, "rollout", [7])


def test_states_are_kept_once_and_the_bytes_are_known():
    """A rollout's obs and next_obs are views of one (k + 1, E n, ds) array of its states (next_obs
    of a step is obs of the next, clipped as the model's state); ``rollout_bytes`` is what its
    arrays hold; ``Rollouts.parts`` cuts the points so that each part's rollout fits the budget."""
    d = np.array([0.4, -0.3], np.float32)
    model = ensemble([d, d * 1.5, -2 * d], keep=2)._replace(low=np.array([-1.5, -1.5], np.float32),
                                                            high=np.array([1.5, 1.5], np.float32))
    e = expand(model, policy, OBS, ACT, 5)
    assert np.shares_memory(e.steps["obs"], e.steps["next_obs"])
    np.testing.assert_array_equal(e.steps["next_obs"][:-1], e.steps["obs"][1:])
    np.testing.assert_array_equal(e.steps["next_obs"][-1], e.obs)
    assert e.obs.max() <= 1.5 and e.obs.min() >= -1.5
    held = (e.steps["obs"].nbytes + e.steps["obs"][0].nbytes + e.alive.nbytes + e.apart.nbytes
            + sum(v.nbytes for key, v in e.steps.items() if key not in STATES))
    assert rollout_bytes(model, len(OBS), 2, 1, 5) == held
    one = rollout_bytes(model, 1, 2, 1, 5)
    for budget, sizes in ((one, [1, 1, 1]), (2 * one + 1, [2, 1]), (3 * one, [3]), (one // 2, [1, 1, 1])):
        parts = Rollouts(budget).parts(model, OBS, ACT, 5)
        assert [p.stop - p.start for p in parts] == sizes and parts[0].start == 0 and parts[-1].stop == 3
    with pytest.raises(ValueError, match="budget must be > 0"):
        Rollouts(0)


def test_the_answer_reads_the_kept_members_rows_only():
    """G_k evaluates the reward and the operator at the m n kept rows only (the runaway member's
    states never reach them); a reward already evaluated at every row (kauto's spread) is reused."""
    d = np.array([0.1, -0.2], np.float32)
    e = expand(ensemble([d, d * 1.1, 5 * d], keep=2), policy, OBS, ACT, 4)
    seen, tails = [], []

    def reward(f):
        seen.append(np.asarray(f["obs"]))
        return height(f)

    def tail(s, a):
        tails.append(np.asarray(s))
        return bootstrap(s, a)

    q = expanded_q(e, reward, tail, GAMMA)
    assert sum(len(x) for x in seen) == 4 * 6 and len(tails[0]) == 6             # k m n and m n rows, not k E n, E n
    np.testing.assert_allclose(np.sort(tails[0], 0), np.sort(e.obs[:6], 0))         # members 0 and 1 only
    np.testing.assert_allclose(q, (e.weights.reshape(-1) * along_q(e, height, bootstrap, GAMMA, (0,))[:, 0])
                               .reshape(2, 3, 3).sum(1), rtol=1e-6)
    seen.clear()
    e.sums_at(reward, GAMMA, "rollout", (4,))                                        # every row, kept
    assert sum(len(x) for x in seen) == 4 * 9
    np.testing.assert_allclose(expanded_q(e, reward, tail, GAMMA), q, rtol=1e-6)
    assert sum(len(x) for x in seen) == 4 * 9                                        # not called again


class _Unread:
    """A rollout column that fails if anything takes its values (its shape and dtype stay)."""

    def __init__(self, v):
        self.shape, self.dtype = v.shape, v.dtype

    def __getitem__(self, at):
        raise AssertionError("a column the reward does not read was gathered")


@pytest.mark.parametrize("kept", [False, True])
def test_a_chunk_makes_only_the_columns_the_reward_reads(kept):
    """The chunks count their rows themselves: a reward of the state alone never has the rollout's
    actions gathered (at every row or at the kept rows)."""
    d = np.array([0.1, -0.2], np.float32)
    e = expand(ensemble([d, d * 1.1, 5 * d], keep=2), policy, OBS, ACT, 4)
    want = e.step_rewards(height, "rollout")                                          # (k, E n)
    rows = np.flatnonzero(e.weights.reshape(-1)) if kept else None
    e.last[0] = None
    e.steps["action"] = _Unread(e.steps["action"])
    got = e.step_rewards(height, "rollout", rows)
    np.testing.assert_allclose(got, want if rows is None else want[:, rows], rtol=1e-6)


def test_an_expansions_rows_answer_as_in_the_whole():
    """``Expansion.rows``: some rows of a rollout, each its own point of one member, answer along
    themselves (``along_q``) as those rows do in the whole rollout, their states kept once."""
    d = np.array([0.1, -0.2], np.float32)
    ex = expand(ensemble([d, d * 1.1, 5 * d], keep=2), policy, OBS, ACT, 6)       # 3 members x 3 points
    rows = np.array([1, 4, 6])
    part = ex.rows(rows)
    assert part.weights.shape == (1, 3) and np.all(part.weights == 1.0) and part.horizon == 6
    assert np.shares_memory(part.steps["obs"], part.steps["next_obs"])
    reward = lambda f: f["obs"][:, 0] - f["action"][:, 0] ** 2  # noqa: E731
    tail = lambda s, a: np.stack([s[:, 0], 2 * s[:, 1]])  # noqa: E731 - two seeds
    whole = along_q(ex, reward, tail, 0.9, (0, 2, 5))                              # (2, 3, E n)
    np.testing.assert_allclose(along_q(part, reward, tail, 0.9, (0, 2, 5)), whole[..., rows], rtol=1e-6)


def stop_past(level: float):
    """until: a point stops where its kept members' mean first coordinate has passed ``level``."""
    def until(n, members):
        return lambda t, s, w, live: (s[:, 0].reshape(w.shape) * w).sum(0) >= level
    return until


def test_points_that_stop_early_answer_as_their_own_shorter_expansion():
    """With ``until``, point i's answer is G_{k_i} at that point, k_i the first step its state
    passes the level (s_t = s_0 + 0.1 t): frozen after, at (s_{k_i}, pi(s_{k_i})), in every later
    row; the model steps only the points still rolling; a prefix is the rollout stopped there."""
    delta = np.array([0.1, -0.2], np.float32)
    model = ensemble([delta, delta * 1.2, delta * 0.9], keep=2)
    ex = expand(model, policy, OBS, ACT, 12, stop_past(0.75))
    plain = expand(model, policy, OBS, ACT, 12)
    first = [next((t for t in range(1, 13) if (plain.steps["obs"][t] if t < 12 else plain.obs)[
        np.flatnonzero(plain.weights[:, i] > 0) * 3 + i, 0].mean() >= 0.75), 12) for i in range(3)]
    np.testing.assert_array_equal(ex.ends, first)
    assert list(ex.ends) == [3, 12, 8]           # 0.5 + 0.1 t, -1 + 0.1 t never, 0 + 0.1 t
    reward = lambda f: f["obs"][:, 0] - f["action"][:, 0] ** 2  # noqa: E731
    q = expanded_q(ex, reward, bootstrap, GAMMA)                                   # (2, 3)
    for i, k in enumerate(ex.ends):
        alone = expanded_q(expand(model, policy, OBS[i:i + 1], ACT[i:i + 1], int(k)), reward, bootstrap, GAMMA)
        np.testing.assert_allclose(q[:, i], alone[:, 0], rtol=1e-5, atol=1e-5)
    rows = np.arange(3) * 3                                                        # point 0's rows, every member
    np.testing.assert_array_equal(ex.steps["obs"][5:, rows], np.broadcast_to(ex.obs[rows], (7, 3, 2)))
    np.testing.assert_allclose(ex.steps["action"][5:, rows], np.broadcast_to(-ex.obs[rows, :1], (7, 3, 1)), atol=1e-6)
    short = ex.prefix(5)
    np.testing.assert_array_equal(short.ends, [3, 5, 5])
    np.testing.assert_allclose(expanded_q(short, reward, bootstrap, GAMMA),
                               expanded_q(expand(model, policy, OBS, ACT, 5, stop_past(0.75)), reward, bootstrap,
                                          GAMMA), rtol=1e-6)
    with pytest.raises(ValueError, match="stop at their own steps"):
        along_q(ex, reward, bootstrap, GAMMA, (0,))


def test_a_rule_that_never_stops_is_the_plain_rollout_and_one_that_always_stops_ends_it():
    delta = np.array([0.1, -0.2], np.float32)
    model = drift_model(delta)
    never = expand(model, policy, OBS, ACT, 6, lambda n, e: lambda t, s, w, live: np.zeros(w.shape[1], bool))
    plain = expand(model, policy, OBS, ACT, 6)
    assert list(never.ends) == [6, 6, 6]
    for r in (height, lambda f: f["action"][:, 0]):
        np.testing.assert_array_equal(expanded_q(never, r, bootstrap, GAMMA), expanded_q(plain, r, bootstrap, GAMMA))
    at_two = expand(model, policy, OBS, ACT, 6, lambda n, e: lambda t, s, w, live: np.full(w.shape[1], t >= 2))
    assert list(at_two.ends) == [2, 2, 2] and np.all(at_two.alive == 1)
    np.testing.assert_allclose(expanded_q(at_two, height, bootstrap, GAMMA),
                               expanded_q(expand(model, policy, OBS, ACT, 2), height, bootstrap, GAMMA), rtol=1e-6)
    c = lambda f: np.full(len(f["obs"]), 2.0)  # noqa: E731 - a constant, with G[c] exact
    exact = lambda s, a: np.full((1, len(s)), 2.0 / (1 - GAMMA))  # noqa: E731
    np.testing.assert_allclose(expanded_q(expand(model, policy, OBS, ACT, 9, stop_past(0.75)), c, exact, GAMMA),
                               2.0 / (1 - GAMMA), rtol=1e-6)


def assert_same_rollout(got, want) -> None:
    for key in want.steps:
        np.testing.assert_array_equal(got.steps[key], want.steps[key], err_msg=key)
    for field in ("alive", "obs", "action", "apart"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)


def counted_steps(monkeypatch) -> list:
    """The rows of every model step a rollout makes, recorded."""
    rows, step = [], expansion.rollout_step
    monkeypatch.setattr(expansion, "rollout_step", lambda m, s, a: rows.append(len(s)) or step(m, s, a))
    return rows


@pytest.mark.parametrize("terminated", [None, 0.2])
def test_a_point_in_a_cycle_repeats_it_without_the_model(monkeypatch, terminated):
    """Three members in exact 2-cycles (s -> -s + c_e -> s under pi(s) = -2 s), apart from each
    other, from s_1 (s_0's action is the query's own): with ``cycle`` on, the model steps until
    each point has come back to its state two steps before at three steps running (s_3 = s_1, s_4
    = s_2, s_5 = s_3: 5 steps), and the 30-step rollout is the one without it
    (states, actions, survival, the members' distances and, the cycle not closed, the answers),
    keep = 2 included."""
    model = action_model([[0.0, 0.0], [0.1, -0.1], [0.5, 0.3]], terminated)._replace(keep=2, close=False)
    twice = lambda s: -2.0 * s  # noqa: E731
    plain = expand(model._replace(cycle=0.0), twice, OBS, ACT[:, [0, 0]], 30)
    rows = counted_steps(monkeypatch)
    looped = expand(model._replace(cycle=1e-6), twice, OBS, ACT[:, [0, 0]], 30)
    assert len(rows) == 5
    for key in plain.steps:
        np.testing.assert_allclose(looped.steps[key], plain.steps[key], atol=1e-6, err_msg=key)
    np.testing.assert_allclose(looped.obs, plain.obs, atol=1e-6)
    np.testing.assert_allclose(looped.action, plain.action, atol=1e-6)
    np.testing.assert_allclose(looped.alive, plain.alive, rtol=1e-6)
    np.testing.assert_allclose(looped.apart, plain.apart, rtol=1e-6)
    assert looped.ends is None
    np.testing.assert_array_equal(looped.weights, plain.weights)
    boot = lambda s, a: s[None, :, 0] - a[None, :, 1]  # noqa: E731
    np.testing.assert_allclose(expanded_q(looped, height, boot, GAMMA), expanded_q(plain, height, boot, GAMMA),
                               rtol=1e-6, atol=1e-6)


def test_points_in_their_cycles_beside_a_stopped_one_answer_as_their_own_rollouts(monkeypatch):
    """Points 0 and 2 enter their 2-cycles (found at step 5), point 1 stops at step 3 (``until``):
    from step 5 no point rolls, the model steps no more, the stopped point's rows stay frozen and
    the cycling ones repeat their cycle to step 30; every answer is that point's own rollout's
    without the cycle (30 steps, or 3 for the stopped one), and the stopped point's reward is
    evaluated at its 4 steps alone."""
    model = action_model([[0.0, 0.0], [0.1, -0.1], [0.5, 0.3]])._replace(keep=2, close=False)
    twice = lambda s: -2.0 * s  # noqa: E731
    at_three = lambda n, e: lambda t, s, w, live: (live == 1) & (t >= 3)  # noqa: E731
    rows = counted_steps(monkeypatch)
    ex = expand(model._replace(cycle=1e-6), twice, OBS, ACT[:, [0, 0]], 30, at_three)
    assert list(ex.ends) == [30, 3, 30] and len(rows) == 5
    np.testing.assert_array_equal(ex.repeats.first.reshape(3, 3)[:, 1], [4, 4, 4])   # point 1: x_4 on copy x_3
    frozen = np.arange(3) * 3 + 1                                                       # point 1's rows
    np.testing.assert_array_equal(ex.steps["obs"][3:, frozen], np.broadcast_to(ex.obs[frozen], (27, 3, 2)))
    boot = lambda s, a: s[None, :, 0] - a[None, :, 1]  # noqa: E731
    q = expanded_q(ex, height, boot, GAMMA)
    for i, k in enumerate(ex.ends):
        alone = expand(model._replace(cycle=0.0), twice, OBS[i:i + 1], ACT[i:i + 1][:, [0, 0]], int(k))
        np.testing.assert_allclose(q[:, i], expanded_q(alone, height, boot, GAMMA)[:, 0], rtol=1e-6, atol=1e-6)
        if k == 30:
            mine = np.arange(3) * 3 + i
            np.testing.assert_allclose(ex.steps["obs"][:, mine], alone.steps["obs"], atol=1e-6)
            np.testing.assert_allclose(ex.apart[:, :, i], alone.apart[:, :, 0], rtol=1e-6)


def test_a_repeated_step_takes_the_value_of_the_step_it_copies():
    """Two rows: the first repeats a 2-cycle from step 3, the second a fixed point from step 4."""
    rep = Repeats(np.array([3, 4]), np.array([2, 1]))
    np.testing.assert_array_equal(rep.source(6, np.arange(2)), [[0, 3], [1, 4], [2, 5], [1, 6], [2, 6], [1, 6]])
    np.testing.assert_array_equal(rep.positions(np.array([1]), 2), [1, 3, 5, 7])       # u * 2 + 1, u < 4
    assert rep.prefix(5).first.tolist() == [3, 4] and rep.prefix(4).first.tolist() == [3, 4]
    assert rep.prefix(3) is None                                                       # nothing repeats in 3 steps


@pytest.mark.parametrize("terminated", [None, 0.2])
def test_a_reward_along_a_cycling_rollout_is_evaluated_at_its_distinct_steps_alone(terminated):
    """Along a rollout whose points repeat their cycles the reward sees each row's distinct steps
    only (their list padded to a power of two), its values at the copies are the copied steps'
    to the bit, the sums and answers those of every step's values; a reward held for every row
    serves a prefix at some rows without a new call."""
    model = action_model([[0.0, 0.0], [0.1, -0.1], [0.5, 0.3]], terminated)._replace(keep=2, cycle=1e-6,
                                                                                      close=False)
    twice = lambda s: -2.0 * s  # noqa: E731
    looped = expand(model, twice, OBS, ACT[:, [0, 0]], 30)
    assert looped.repeats is not None and np.all(looped.repeats.first < 30)
    seen = []

    def reward(f):
        seen.append(len(f["obs"]))
        return np.asarray(f["obs"])[:, 0] * np.asarray(f["action"])[:, 1] - np.asarray(f["next_obs"])[:, 1] ** 2

    every = {key: v.reshape(-1, *v.shape[2:]) for key, v in looped.steps.items()}      # (k E n, ...)
    want = np.asarray(reward(every), np.float32).reshape(30, -1)                       # (k, E n)
    seen.clear()
    np.testing.assert_array_equal(looped.step_rewards(reward, "rollout"), want)
    distinct = int(looped.repeats.first.sum())
    assert sum(seen) == 1 << (distinct - 1).bit_length() and sum(seen) < want.size
    np.testing.assert_array_equal(looped.step_rewards(reward, "rollout", np.array([7, 2])), want[:, [7, 2]])
    disc = GAMMA ** np.arange(30)
    full = np.stack([np.einsum("u,un,un->n", disc[:j], looped.alive[:j], want[:j]) for j in (0, 4, 30)])
    seen.clear()
    again = lambda f: reward(f)  # noqa: E731 - the same reward, not yet held
    np.testing.assert_allclose(looped.sums_at(again, GAMMA, "rollout", [0, 4, 30]), full, rtol=1e-12, atol=1e-12)
    short = looped.prefix(12)
    boot = lambda s, a: s[None, :, 0] - a[None, :, 1]  # noqa: E731
    w = short.weights.reshape(-1)
    tail = GAMMA ** 12 * short.alive[12].astype(np.float64) * boot(short.obs, short.action)[0]
    paid = np.einsum("u,un,un->n", disc[:12], short.alive[:12], want[:12])
    np.testing.assert_allclose(expanded_q(short, again, boot, GAMMA)[0],
                               ((paid + tail) * w).reshape(3, -1).sum(0), rtol=1e-12)
    assert len(seen) == 1                                       # the prefix's answer read the held values
    plain = expand(model._replace(cycle=0.0), twice, OBS, ACT[:, [0, 0]], 30)
    assert plain.repeats is None
    np.testing.assert_allclose(expanded_q(looped, reward, boot, GAMMA), expanded_q(plain, reward, boot, GAMMA),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("most", [1, 4, 16, 1024])
@pytest.mark.parametrize("least", [1, 4, 64])
def test_chunks_cover_a_list_with_powers_of_two_and_little_waste(most, least):
    """Every entry in a chunk, chunks in order, each a power of two of at most ``most``; fewer
    than ``least`` entries evaluated in vain (beyond the list, or twice where the last overlaps)."""
    for f in range(1, 300):
        pieces = chunks(f, most, least)
        assert all(size & (size - 1) == 0 and size <= max(most, 1 << (f - 1).bit_length()) for _, size in pieces)
        assert pieces[0][0] == 0 and all(lo <= lo2 for (lo, _), (lo2, _) in zip(pieces, pieces[1:]))
        covered = np.zeros(max(f, pieces[-1][0] + pieces[-1][1]), int)
        for lo, size in pieces:
            covered[lo:lo + size] += 1
        assert np.all(covered[:f] >= 1)
        waste = covered.sum() - f
        assert waste < min(least, most) or (len(pieces) == 1 and pieces[0][1] < 2 * f)
        assert len(pieces) == 1 or pieces[-1][0] + pieces[-1][1] == f


def test_a_long_list_of_distinct_steps_goes_to_the_reward_in_chunks_of_powers_of_two(monkeypatch):
    """Chunks of several lengths (``chunks``) give every distinct step's value to the bit, the
    reward seeing only powers of two and few entries more than there are."""
    model = action_model([[0.0, 0.0], [0.1, -0.1], [0.5, 0.3]], None)._replace(keep=2, cycle=1e-6)
    looped = expand(model, lambda s: -2.0 * s, OBS, ACT[:, [0, 0]], 30)
    every = {key: v.reshape(-1, *v.shape[2:]) for key, v in looped.steps.items()}      # (k E n, ...)
    want = np.asarray(every["obs"][:, 0] - 3 * every["next_obs"][:, 1], np.float32).reshape(30, -1)
    seen = []

    def reward(f):
        seen.append(len(f["obs"]))
        return f["obs"][:, 0] - 3 * f["next_obs"][:, 1]

    monkeypatch.setattr(expansion, "REWARD_BYTES", 8 * looped.row_bytes())             # 8 entries a chunk at most
    monkeypatch.setattr(expansion, "CHUNK_ROWS", 2)
    np.testing.assert_array_equal(looped.step_rewards(reward, "rollout"), want)
    distinct = int(looped.repeats.first.sum())
    assert distinct > 8 and len(set(seen)) > 1 and all(size & (size - 1) == 0 and size <= 8 for size in seen)
    assert distinct <= sum(seen) < distinct + 2


def test_a_new_reward_asked_as_kauto_asks_remakes_nothing_reward_free(monkeypatch):
    """kauto's requests along one cycling rollout (the spread at every row for six horizons, then
    the answer at the kept rows) keep their reward-free parts in the rollout's memo: a second new
    reward asked the same way makes none of them again (none pushed out by another)."""
    model = action_model([[0.0, 0.0], [0.1, -0.1], [0.5, 0.3]], None)._replace(keep=2, cycle=1e-6)
    looped = expand(model, lambda s: -2.0 * s, OBS, ACT[:, [0, 0]], 30)
    assert looped.repeats is not None
    made = []
    remember = expansion.Expansion.remember

    def counted(self, key, make):
        made.extend([key[0]] if key not in self.memo else [])
        return remember(self, key, make)

    monkeypatch.setattr(expansion.Expansion, "remember", counted)
    boot = lambda s, a: s[None, :, 0]  # noqa: E731

    def ask():
        reward = lambda f: f["obs"][:, 0] - f["next_obs"][:, 1]  # noqa: E731 - a new reward each time
        point_spread(looped, reward, (0, 2, 5, 10, 20, 30), GAMMA)
        return expanded_q(looped.prefix(20), reward, boot, GAMMA)

    first = ask()
    assert made                                               # the first request makes its parts
    made.clear()
    np.testing.assert_array_equal(ask(), first)
    assert made == []


@pytest.mark.parametrize("terminated", [None, 0.2])
def test_a_closed_cycle_answers_as_the_rollout_kept_up_forever(terminated):
    """With ``close`` (the default) a point repeating its cycle before step k answers by the cycle
    kept up forever: the answer of a rollout long enough for the tail not to count (gamma^400),
    at every horizon past the cycle's start and along the rollout (along_q), without asking the
    operator where every row is closed; a constant is exact; a horizon before the cycle closes
    nothing."""
    model = action_model([[0.0, 0.0], [0.1, -0.1], [0.5, 0.3]], terminated)._replace(keep=2, cycle=1e-6)
    assert model.close
    twice = lambda s: -2.0 * s  # noqa: E731
    long = expand(model._replace(cycle=0.0), twice, OBS, ACT[:, [0, 0]], 400)
    looped = expand(model, twice, OBS, ACT[:, [0, 0]], 30)
    asked = []

    def boot(s, a):
        asked.append(len(s))
        return s[None, :, 0] - a[None, :, 1]

    reward = lambda f: f["obs"][:, 0] * f["action"][:, 1] + f["next_obs"][:, 1]  # noqa: E731
    want = expanded_q(long, reward, boot, GAMMA)
    for k in (30, 12, 7):
        asked.clear()
        np.testing.assert_allclose(expanded_q(looped.prefix(k), reward, boot, GAMMA), want, rtol=1e-6, atol=1e-6)
        assert asked == [0]                                     # every row closed: no rows, for the leading axes
    opened = replace(looped, close=False)                       # the same rollout, sharing its memo (Rollouts.get)
    np.testing.assert_array_equal(expanded_q(opened, reward, boot, GAMMA),
                                  expanded_q(expand(model._replace(close=False), twice, OBS, ACT[:, [0, 0]], 30),
                                             reward, boot, GAMMA))
    np.testing.assert_allclose(along_q(looped, reward, boot, GAMMA, (0, 3, 8)),
                               along_q(long, reward, boot, GAMMA, (0, 3, 8)), rtol=1e-5, atol=1e-5)
    early = looped.prefix(3)                                    # the cycle found after 5 steps: nothing closed
    assert early.repeats is None
    np.testing.assert_allclose(expanded_q(early, reward, boot, GAMMA),
                               expanded_q(expand(model._replace(cycle=0.0), twice, OBS, ACT[:, [0, 0]], 3), reward,
                                          boot, GAMMA), rtol=1e-6)
    if terminated is None:
        two = lambda f: np.full(len(f["obs"]), 2.0)  # noqa: E731
        np.testing.assert_allclose(expanded_q(looped, two, boot, GAMMA), 2.0 / (1 - GAMMA), rtol=1e-6)


def test_a_point_settling_at_a_fixed_point_answers_within_the_tolerance(monkeypatch):
    """s_t = (-1/2)^t s_0 under pi(s) = -1.5 s: a point stops calling the model once it moves
    less than the tolerance, each at its own step (the one at 0 from the first), the others still
    stepping (padded to a power of two; on an accelerator to all the points); the answers are the
    full rollout's to within the states' error, the constants exact."""
    model = action_model([[0.0, 0.0]])
    obs = np.array([[0.5, 1.0], [-100.0, 2.0], [0.0, 0.0]], np.float32)
    damped = lambda s: -1.5 * s  # noqa: E731
    plain = expand(model._replace(cycle=0.0), damped, obs, np.zeros((3, 2), np.float32), 60)
    rows = counted_steps(monkeypatch)
    settled = expand(model._replace(cycle=1e-3), damped, obs, np.zeros((3, 2), np.float32), 60)
    assert len(rows) < 30 and set(rows) == {3}                # by default never padded below FEWEST_ROWS points
    rows.clear()
    monkeypatch.setattr(expansion, "FEWEST_ROWS", 1)
    assert_same_rollout(expand(model._replace(cycle=1e-3), damped, obs, np.zeros((3, 2), np.float32), 60), settled)
    assert len(rows) < 30 and rows[0] == 3 and min(rows) < 3   # down to the points still rolling
    rows.clear()
    monkeypatch.setattr(expansion, "on_cpu", lambda: False)    # an accelerator: every step on all the points
    assert_same_rollout(expand(model._replace(cycle=1e-3), damped, obs, np.zeros((3, 2), np.float32), 60), settled)
    assert len(rows) < 30 and set(rows) == {3}
    np.testing.assert_allclose(settled.steps["obs"], plain.steps["obs"], atol=1e-2)
    boot = lambda s, a: s[None, :, 1] ** 2 + a[None, :, 0]  # noqa: E731
    np.testing.assert_allclose(expanded_q(settled, height, boot, GAMMA), expanded_q(plain, height, boot, GAMMA),
                               atol=1e-2)
    one = lambda f: np.ones(len(f["obs"]), np.float32)  # noqa: E731
    np.testing.assert_allclose(expanded_q(settled, one, lambda s, a: np.full((1, len(s)), 1 / (1 - GAMMA)), GAMMA),
                               1 / (1 - GAMMA), rtol=1e-6)


def test_the_survival_falls_on_along_a_cycle_found_while_others_still_roll():
    """Points settling at the fixed point at their own steps (the one at 0 first, the one at -100
    last), the model ending an episode with probability 0.2 a step: a point repeating its cycle
    survives 0.8 a step on, while the others still roll and after, as in the rollout without cycles."""
    model = action_model([[0.0, 0.0]], terminated=0.2)
    obs = np.array([[0.5, 1.0], [-100.0, 2.0], [0.0, 0.0]], np.float32)
    damped = lambda s: -1.5 * s  # noqa: E731
    plain = expand(model._replace(cycle=0.0), damped, obs, np.zeros((3, 2), np.float32), 60)
    settled = expand(model._replace(cycle=1e-3), damped, obs, np.zeros((3, 2), np.float32), 60)
    first = settled.repeats.first
    assert first[2] < first[0] < first[1] < 60                                         # each found at its own step
    np.testing.assert_allclose(settled.alive, plain.alive, rtol=1e-6)
    np.testing.assert_allclose(settled.alive, np.broadcast_to(0.8 ** np.arange(61)[:, None], (61, 3)), rtol=1e-5)


def test_a_rollout_without_cycles_models_every_step(monkeypatch):
    """Drifting states never come back: every step is the model's, the same rollout as with the
    cycle off; and points stopped by a rule still stop while others settle."""
    rows = counted_steps(monkeypatch)
    model = drift_model(np.array([0.1, -0.2], np.float32))
    e = expand(model._replace(cycle=1e-3), policy, OBS, ACT, 12)
    assert len(rows) == 12
    np.testing.assert_array_equal(e.steps["obs"], expand(model._replace(cycle=0.0), policy, OBS, ACT, 12).steps["obs"])
    cyc = action_model([[0.0, 0.0]])._replace(cycle=1e-6)
    stop_first = lambda n, e: lambda t, s, w, idx: idx == 0  # noqa: E731
    both = expand(cyc, lambda s: -2.0 * s, OBS, ACT[:, [0, 0]], 20, stop_first)
    plain = expand(cyc._replace(cycle=0.0), lambda s: -2.0 * s, OBS, ACT[:, [0, 0]], 20, stop_first)
    np.testing.assert_array_equal(both.ends, [1, 20, 20])
    for got, want in [(both.obs, plain.obs), (both.steps["obs"], plain.steps["obs"]), (both.alive, plain.alive)]:
        np.testing.assert_allclose(got, want, atol=1e-6)


def noisy(model, sigma, noise: float = 1.0, copies: int = 3):
    """The model with its residual sigma and a noisy rollout's settings."""
    return model._replace(residual=np.asarray(sigma, np.float32), noise=noise, copies=copies)


def test_a_noisy_rollout_with_a_zero_residual_is_the_exact_one():
    """sigma = 0: each of the R copies is the exact rollout, the E R members weighed by their copy's
    keep, 1 / (m R) each: the exact answers, every shorter horizon too."""
    d = np.array([0.1, -0.2], np.float32)
    model = ensemble([d, d * 1.1, 5 * d], keep=2)
    exact = expand(model, policy, OBS, ACT, 4)
    e = expand(noisy(model, [0.0, 0.0], copies=4), policy, OBS, ACT, 4)
    assert e.copies == 4 and e.weights.shape == (12, 3) and e.obs.shape == (36, 2)
    np.testing.assert_allclose(e.weights.sum(0), 1.0)
    np.testing.assert_allclose(e.weights.reshape(3, 4, 3), np.repeat(exact.weights[:, None] / 4, 4, 1))
    r2, g2 = (lambda f: f["obs"][:, 1] ** 2), (lambda s, a: s[None, :, 1] ** 2)
    for k in (4, 2):
        for r, g in ((height, bootstrap), (r2, g2)):
            np.testing.assert_allclose(expanded_q(e.prefix(k), r, g, GAMMA), expanded_q(exact.prefix(k), r, g, GAMMA),
                                       rtol=1e-5, atol=1e-6)


def test_a_noisy_rollout_moves_each_step_by_its_draws_and_answers_by_the_copies_mean():
    """s^r_t = s_0 + t d + c sigma sum_{u<t} eps^r_u, the draws eps (R, n, ds) per step each row's
    own (``noise_draws`` of its key), c sigma_d at most noise_cap std_d (here 0.15 -> 0.1 on the first
    dimension, the data's std 1); the answer for r = s_1^2 is the mean over the R copies of each
    copy's exact answer."""
    d, sigma, c, copies, k = np.array([0.1, -0.2], np.float32), np.array([0.5, 0.2], np.float32), 0.3, 5, 4
    model = noisy(drift_model(d), sigma, c, copies)
    scale = np.array([0.1, 0.06], np.float32)                                                 # (ds,) capped, not
    np.testing.assert_allclose(onestep.noise_scale(model), scale, rtol=1e-6)
    e = expand(model, policy, OBS, ACT, k)
    keys = expansion.row_keys(OBS, ACT, 1, copies)                                            # (R n,)
    eps = np.stack([expansion.noise_draws(keys, t, 2).reshape(copies, len(OBS), 2) * scale
                    for t in range(1, k + 1)])                                                # (k, R, n, ds)
    assert not np.allclose(eps[:, :, 0], eps[:, :, 1])                                        # each point its own
    moved = np.concatenate([np.zeros((1, copies, len(OBS), 2), np.float32), np.cumsum(eps, 0)])   # (k + 1, R, n, ds)
    states = OBS[None, None] + np.arange(k + 1)[:, None, None, None] * d + moved              # (k + 1, R, n, ds)
    np.testing.assert_allclose(e.obs.reshape(copies, 3, 2), states[k], atol=1e-5)
    q = expanded_q(e, lambda f: f["obs"][:, 1] ** 2, lambda s, a: s[None, :, 1] ** 2, GAMMA)
    want = (sum(GAMMA ** t * states[t, ..., 1] ** 2 for t in range(k)) + GAMMA ** k * states[k, ..., 1] ** 2).mean(0)
    np.testing.assert_allclose(q[0], want, rtol=1e-5)
    assert not np.allclose(want, expanded_q(expand(drift_model(d), policy, OBS, ACT, k),
                                            lambda f: f["obs"][:, 1] ** 2, lambda s, a: s[None, :, 1] ** 2, GAMMA))


def test_a_noisy_answer_keeps_the_exact_properties_and_is_the_same_alone_in_any_batch_and_call(monkeypatch):
    """Linear, monotone and constant-exact as the exact rollout; a point's answer the same asked
    again, alone, or beside points whose episodes end early and leave the batch (every batch its own
    size: the rows' draws by member and copy)."""
    monkeypatch.setattr(expansion, "FEWEST_ROWS", 1)
    rule = lambda f: (f["next_obs"][:, 0] >= 1.0).astype(np.float32)  # noqa: E731
    model = noisy(goal_ensemble(np.array([[0.3], [0.25], [0.5]]), -1.0, 10.0, rule)._replace(keep=2), [0.05], 1.0, 4)
    obs, act, zero = np.array([[0.9], [-3.0], [0.8]], np.float32), np.zeros((3, 1), np.float32), np.zeros_like
    e = expand(model, zero, obs, act, 12)
    r2, g2 = (lambda f: f["obs"][:, 0] ** 2), (lambda s, a: s[None, :, 0] ** 2)
    q = expanded_q(e, r2, g2, GAMMA)
    np.testing.assert_array_equal(q, expanded_q(expand(model, zero, obs, act, 12), r2, g2, GAMMA))
    alone = expanded_q(expand(model, zero, obs[1:2], act[1:2], 12), r2, g2, GAMMA)
    np.testing.assert_allclose(alone[0, 0], q[0, 1], rtol=1e-6)
    both = expanded_q(e, lambda f: 2 * r2(f) - 3 * height(f), lambda s, a: 2 * g2(s, a) - 3 * s[None, :, 0], GAMMA)
    np.testing.assert_allclose(both, 2 * q - 3 * expanded_q(e, height, lambda s, a: s[None, :, 0], GAMMA),
                               rtol=1e-5, atol=1e-5)
    assert np.all(expanded_q(e, lambda f: r2(f) + 1, lambda s, a: g2(s, a) + 10, GAMMA) >= q)
    free = expand(noisy(ensemble([np.array([0.1, -0.2], np.float32)] * 2, keep=0), [0.3, 0.1]), policy, OBS, ACT, 5)
    np.testing.assert_allclose(expanded_q(free, lambda f: np.full(len(f["obs"]), 2.0),
                                          lambda s, a: np.full((1, len(s)), 2.0 / (1 - GAMMA)), GAMMA),
                               2.0 / (1 - GAMMA), rtol=1e-6)


def test_noise_draws_are_standard_normal_independent_and_a_function_of_the_row_alone():
    """Counter-based draws: mean 0, variance 1, Gaussian tails, no correlation between points,
    dimensions, steps or copies; a row's draw the same whatever rows beside it, another point's
    another (a point is its float32 bytes: obs and action)."""
    rng = np.random.default_rng(0)
    obs, act = rng.standard_normal((2000, 3)).astype(np.float32), rng.standard_normal((2000, 1)).astype(np.float32)
    keys = expansion.row_keys(obs, act, 2, 3)                                                 # (E R n,)
    assert keys.shape == (12000,) and len(np.unique(keys)) == 12000
    z = np.stack([expansion.noise_draws(keys, t, 3) for t in range(1, 21)])                  # (20, E R n, 3)
    assert z.dtype == np.float32 and abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs((np.abs(z) > 1.96).mean() - 0.05) < 0.003 and abs((np.abs(z) > 3).mean() - 0.0027) < 0.0005
    flat = z.reshape(20, 6, 2000, 3)                                        # (step, member-copy, point, dim)
    for a, b in [(flat[:, :, :-1], flat[:, :, 1:]), (flat[..., 0], flat[..., 1]), (flat[:-1], flat[1:]),
                 (flat[:, :-1], flat[:, 1:])]:
        assert abs(np.corrcoef(a.reshape(-1), b.reshape(-1))[0, 1]) < 0.01
    part = expansion.row_keys(obs[5:9], act[5:9], 2, 3).reshape(6, 4)
    np.testing.assert_array_equal(part, keys.reshape(6, 2000)[:, 5:9])
    np.testing.assert_array_equal(expansion.noise_draws(part.reshape(-1), 7, 3),
                                  z[6].reshape(6, 2000, 3)[:, 5:9].reshape(-1, 3))
    moved = obs.copy()
    moved[0, 0] = np.nextafter(moved[0, 0], np.float32(1))                                  # one bit of one point
    assert np.all(expansion.row_keys(moved, act, 2, 3).reshape(6, 2000)[:, 0] != keys.reshape(6, 2000)[:, 0])


def test_a_noisy_rollout_needs_the_models_residual_and_no_stops():
    model = drift_model(np.array([0.1, -0.2], np.float32))._replace(noise=0.3)
    with pytest.raises(ValueError, match="residual std on the data, which this model"):
        expand(model, policy, OBS, ACT, 3)
    with pytest.raises(ValueError, match="cannot each stop where the bank reaches"):
        expand(noisy(model, [0.1, 0.1]), policy, OBS, ACT, 3, until=lambda n, e: stop_past(5.0))


def test_noisy_rollouts_match_a_stochastic_system_where_the_exact_one_cannot():
    """s' = 0.9 s + a + N(0, 0.1^2) under pi(s) = -0.5 s, r = s^2: E[s_t^2] = m_t^2 + V_t with
    m_{t+1} = 0.4 m_t and V_{t+1} = 0.16 V_t + 0.01. A model fitted on the data predicts the mean;
    its exact rollout pays m_t^2 alone (about 0.1 short), the noisy one (c = 1, its own residual as
    sigma, 2048 copies, each point's draws its own) the variance too, to within a fifth of the gap
    (Monte-Carlo error about 0.005)."""
    rng = np.random.default_rng(0)
    s, a = rng.uniform(-2, 2, (20000, 1)).astype(np.float32), rng.uniform(-1, 1, (20000, 1)).astype(np.float32)
    data = {"obs": s, "action": a, "next_obs": (0.9 * s + a + 0.1 * rng.standard_normal(s.shape)).astype(np.float32)}
    x = np.concatenate([s, a], -1)
    fit = onestep.fit(onestep.OneStepConfig(hidden=(64, 64), steps=3000, ensemble=1, keep=0, noise=1.0, copies=2048),
                      jax.random.PRNGKey(0), data, x.mean(0), x.std(0))
    pi = lambda z: -0.5 * z  # noqa: E731
    obs, act, k = np.array([[1.0], [-0.5], [0.0]], np.float32), np.array([[0.2], [0.0], [-0.3]], np.float32), 60
    m, v, truth = obs[:, 0].astype(np.float64), np.zeros(3), np.zeros(3)
    for t in range(k):
        truth += GAMMA ** t * (m ** 2 + v)
        m, v = (0.9 * m + act[:, 0] if t == 0 else 0.4 * m), (0.16 * v + 0.01 if t else 0.01)
    square, zero = (lambda f: f["obs"][:, 0] ** 2), (lambda s, a: np.zeros((1, len(s))))
    exact = expanded_q(expand(fit._replace(noise=0.0), pi, obs, act, k), square, zero, GAMMA)[0]
    noisy_q = expanded_q(expand(fit, pi, obs, act, k), square, zero, GAMMA)[0]
    gap = truth - exact                                   # sum_t gamma^t V_t: about 0.1 at every point
    assert np.all(gap > 0.08)
    np.testing.assert_allclose(noisy_q, truth, atol=0.2 * gap.min())
