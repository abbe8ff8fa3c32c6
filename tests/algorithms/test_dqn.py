"""Operator DQN on a small tabular MDP recovers the optimal Q (value iteration) for unseen rewards."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.algorithms import dqn
from resolvent.operators import make_network

GAMMA = 0.8
N_S, N_A = 3, 2


def tabular_problem(seed, samples=50):
    """A deterministic MDP (as the paper's environments), every (s, a) in the data.

    x = [onehot(s), onehot(a)]; returns the transitions and P (S, A, S).
    """
    rng = np.random.default_rng(seed)
    nxt = rng.integers(N_S, size=(N_S, N_A))                                 # s' = nxt[s, a]
    s, a = np.meshgrid(np.arange(N_S), np.arange(N_A), indexing="ij")
    s, a = np.repeat(s.ravel(), samples), np.repeat(a.ravel(), samples)
    P = np.zeros((N_S, N_A, N_S))
    P[np.arange(N_S)[:, None], np.arange(N_A)[None], nxt] = 1.0
    eye_s, eye_a = np.eye(N_S, dtype=np.float32), np.eye(N_A, dtype=np.float32)
    pairs = np.array([np.concatenate([eye_s[i], eye_a[j]]) for i in range(N_S) for j in range(N_A)])
    return s, a, nxt[s, a], P, eye_s, eye_a, pairs


def value_iteration(P, r, iters=500):
    """Optimal Q of reward r (S*A,) under P (S, A, S)."""
    r = r.reshape(N_S, N_A)
    q = np.zeros_like(r)
    for _ in range(iters):
        q = r + GAMMA * P @ q.max(1)
    return q.reshape(-1)


def make_data(seed=0, n_train=128):
    s, a, s2, P_hat, eye_s, eye_a, pairs = tabular_problem(seed)
    r_train = jax.random.normal(jax.random.PRNGKey(seed), (n_train, N_S * N_A))   # over pairs
    pair_idx = s * N_A + a
    data = dqn.DQNData(x=jnp.asarray(pairs[pair_idx]), next_s=jnp.asarray(eye_s[s2]),
                       actions=jnp.asarray(eye_a), rewards=r_train[:, pair_idx],
                       done=jnp.zeros(len(s)), xi=jnp.asarray(pairs), enc=r_train)
    return data, P_hat, pairs


@pytest.mark.parametrize("method", ["maxout"])
def test_operator_dqn_matches_value_iteration_on_unseen_rewards(method):
    data, P_hat, pairs = make_data()
    net = make_network(method, GAMMA, (64, 64), 16, 0, heads=8)
    cfg = dqn.DQNConfig(gamma=GAMMA, lr=1e-3, tau=0.05, batch_size=256)
    k_init, k_run, k_te = jax.random.split(jax.random.PRNGKey(1), 3)
    state = dqn.make_initializer(net, cfg)(k_init[None], data)
    untrained = jax.tree_util.tree_map(lambda p: p[0], state.params)
    state, _ = dqn.make_trainer(net, cfg, 2500)(state, data, k_run[None])
    params = jax.tree_util.tree_map(lambda p: p[0], state.params)
    r_test = np.asarray(jax.random.normal(k_te, (16, N_S * N_A)))
    pred = np.asarray(net.apply(params, jnp.asarray(pairs), data.xi, jnp.asarray(r_test)))  # (SA, R)
    truth = np.stack([value_iteration(P_hat, r) for r in r_test], 1)                       # (SA, R)
    err = np.sqrt(np.mean((pred - truth) ** 2)) / np.std(truth)
    assert err < 0.05, f"relative RMSE {err:.3f} on unseen rewards"
    pred0 = np.asarray(net.apply(untrained, jnp.asarray(pairs), data.xi, jnp.asarray(r_test)))
    assert np.sqrt(np.mean((pred0 - truth) ** 2)) / np.std(truth) > 5 * err
    # the greedy policy of each unseen reward is (near-)optimal
    s_rows = jnp.asarray(np.repeat(np.eye(N_S, dtype=np.float32), 16, axis=0))
    enc_rows = jnp.asarray(np.tile(r_test, (N_S, 1)))
    picked = np.asarray(dqn.greedy(net, params, s_rows, data.actions, data.xi, enc_rows))
    t = truth.T.reshape(16, N_S, N_A).transpose(1, 0, 2).reshape(-1, N_A)              # (S R, A)
    regret = t.max(1) - t[np.arange(len(t)), picked]
    assert np.mean(regret) < 0.02 * np.std(truth)


def test_update_is_deterministic_and_seed_dependent():
    data, _, _ = make_data(1, n_train=4)
    net = make_network("vanilla", GAMMA, (16,), 8, 0)
    cfg = dqn.DQNConfig(gamma=GAMMA, batch_size=32)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    run = lambda: dqn.make_trainer(net, cfg, 5)(dqn.make_initializer(net, cfg)(keys, data), data, keys)  # noqa: E731
    (_, l1), (_, l2) = run(), run()
    np.testing.assert_array_equal(l1, l2)
    assert l1[0] != l1[1]


def test_action_grid_and_nearest():
    grid = dqn.action_grid([-2.0], [2.0], 5)
    np.testing.assert_allclose(grid[:, 0], [-2, -1, 0, 1, 2])
    np.testing.assert_array_equal(dqn.nearest_actions(np.array([[-1.9], [0.4], [0.6], [3.0]]), grid),
                                  [0, 2, 3, 4])
    assert dqn.action_grid([-1, -1], [1, 1], 3).shape == (9, 2)
    with pytest.raises(ValueError, match="n_actions"):
        dqn.action_grid([-1], [1], 1)
    with pytest.raises(ValueError, match="operator BCQ"):
        dqn.action_grid(-np.ones(6), np.ones(6), 11)


def test_double_target():
    """Double DQN: with target = online network it is plain DQN; otherwise it differs."""
    data, _, _ = make_data(2, n_train=4)
    net = make_network("maxout", GAMMA, (16,), 8, 0, heads=2)
    p1 = net.init(jax.random.PRNGKey(0), data.x[:1], data.xi, data.enc)
    p2 = net.init(jax.random.PRNGKey(1), data.x[:1], data.xi, data.enc)
    idx = jnp.arange(64)
    plain, double = dqn.DQNConfig(gamma=GAMMA), dqn.DQNConfig(gamma=GAMMA, double=True)
    assert float(dqn.loss(p1, p1, net, plain, data, idx)) == pytest.approx(
        float(dqn.loss(p1, p1, net, double, data, idx)), rel=1e-6)
    assert float(dqn.loss(p1, p2, net, plain, data, idx)) != pytest.approx(
        float(dqn.loss(p1, p2, net, double, data, idx)), rel=1e-6)
