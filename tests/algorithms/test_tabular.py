"""Operator FQE on small random tabular MDPs recovers (I - gamma P_pi)^-1 r for unseen rewards."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.algorithms import FQEConfig, OperatorData, make_initializer, make_predictor, make_trainer
from resolvent.algorithms.fqe import dope
from resolvent.algorithms.fqe import loss as fqe_loss
from resolvent.operators import make_network
from resolvent.rewards import PriorConfig

GAMMA = 0.8


def tabular_problem(seed, n_states=4, n_actions=2, samples=400):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(n_states) * 0.7, size=(n_states, n_actions))   # (S, A, S)
    pi = rng.integers(n_actions, size=n_states)                               # deterministic
    pairs = [(s, a) for s in range(n_states) for a in range(n_actions)]
    n_x = len(pairs)
    onehot = np.eye(n_x, dtype=np.float32)
    idx, nxt = [], []
    for i, (s, a) in enumerate(pairs):
        s2 = rng.choice(n_states, size=samples, p=P[s, a])
        idx += [i] * samples
        nxt += [pairs.index((t, pi[t])) for t in s2]
    idx, nxt = np.array(idx), np.array(nxt)
    # the empirical P_pi of the data: the exact fixed point FQE converges to
    P_pi = np.zeros((n_x, n_x))
    np.add.at(P_pi, (idx, nxt), 1.0)
    P_pi /= P_pi.sum(1, keepdims=True)
    return onehot, idx, nxt, P_pi


@pytest.mark.parametrize("method", ["attention", "linear"])
def test_operator_fqe_matches_resolvent_on_unseen_rewards(method):
    onehot, idx, nxt, P_pi = tabular_problem(0)
    n_x = len(onehot)
    key = jax.random.PRNGKey(0)
    k_tr, k_te, k_init, k_run = jax.random.split(key, 4)
    r_train = jax.random.normal(k_tr, (32, n_x))           # rewards over the 8 (s, a) pairs
    r_test = jax.random.normal(k_te, (16, n_x))
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=r_train[:, idx], done=jnp.zeros(len(idx)),
                        xi=jnp.asarray(onehot), enc=r_train)  # reference points: every pair
    net = make_network(method, GAMMA, (64, 64), 16, 32)
    cfg = FQEConfig(gamma=GAMMA, lr=1e-3, tau=0.05, batch_size=256)
    state = make_initializer(net, cfg)(k_init[None], data)
    state, _ = make_trainer(net, cfg, 4000)(state, data, k_run[None])
    pred = np.asarray(make_predictor(net)(state.params, jnp.asarray(onehot), data.xi, r_test))[0]
    truth = np.linalg.solve(np.eye(n_x) - GAMMA * P_pi, np.asarray(r_test).T)    # (n_x, R_te)
    err = np.sqrt(np.mean((pred - truth) ** 2)) / np.std(truth)
    assert err < 0.1, f"relative RMSE {err:.3f} on unseen rewards"
    # and it is not the trivial answer: an untrained operator is far off
    untrained = make_initializer(net, cfg)(k_init[None], data)
    pred0 = np.asarray(make_predictor(net)(untrained.params, jnp.asarray(onehot), data.xi, r_test))[0]
    assert np.sqrt(np.mean((pred0 - truth) ** 2)) / np.std(truth) > 3 * err


def test_terminations_do_not_bootstrap():
    """With every transition terminal, G[r] = r exactly at the fixed point."""
    onehot, idx, nxt, _ = tabular_problem(1, samples=50)
    r_train = jax.random.normal(jax.random.PRNGKey(1), (8, len(onehot)))
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=r_train[:, idx], done=jnp.ones(len(idx)),
                        xi=jnp.asarray(onehot), enc=r_train)
    net = make_network("vanilla", GAMMA, (64,), 16, 8)
    cfg = FQEConfig(gamma=GAMMA, batch_size=128)
    state = make_initializer(net, cfg)(jax.random.PRNGKey(2)[None], data)
    state, _ = make_trainer(net, cfg, 2000)(state, data, jax.random.PRNGKey(3)[None])
    pred = np.asarray(make_predictor(net)(state.params, jnp.asarray(onehot), data.xi, r_train))[0]
    np.testing.assert_allclose(pred, np.asarray(r_train).T, atol=0.05)


def test_fqe_oracle_recovers_the_resolvent_of_its_reward():
    """The per-reward FQE oracle (a plain Q network, output started at the reward's scale)
    converges to (I - gamma P_pi)^-1 r for the one reward it trains on."""
    onehot, idx, nxt, P_pi = tabular_problem(2)
    r = jax.random.normal(jax.random.PRNGKey(4), (1, len(onehot)))
    scale = jnp.mean(r[:, idx], axis=1, keepdims=True) / (1 - GAMMA)           # (1, 1)
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=r[:, idx], done=jnp.zeros(len(idx)), xi=jnp.asarray(onehot), enc=scale)
    net = make_network("fqe", GAMMA, (64, 64), 16, 1)
    cfg = FQEConfig(gamma=GAMMA, tau=0.05)
    state = make_initializer(net, cfg)(jax.random.PRNGKey(5)[None], data)
    state, _ = make_trainer(net, cfg, 3000)(state, data, jax.random.PRNGKey(6)[None])
    pred = np.asarray(make_predictor(net)(state.params, jnp.asarray(onehot), data.xi, scale))[0, :, 0]
    truth = np.linalg.solve(np.eye(len(onehot)) - GAMMA * P_pi, np.asarray(r[0]))
    assert np.sqrt(np.mean((pred - truth) ** 2)) / np.std(truth) < 0.1


def test_dope_recipe_oracle_recovers_the_resolvent_and_clips_its_targets():
    """DOPE's recipe (AdamW, Polyak 0.005, output scaled by 1 / (1 - gamma), clipped targets)
    converges to the same (I - gamma P_pi)^-1 r; a target network far above what any return of
    the data's rewards can be is clipped to max r / (1 - gamma)."""
    onehot, idx, nxt, P_pi = tabular_problem(2)
    r = jax.random.normal(jax.random.PRNGKey(4), (1, len(onehot)))
    scale = jnp.mean(r[:, idx], axis=1, keepdims=True) / (1 - GAMMA)           # (1, 1)
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=r[:, idx], done=jnp.zeros(len(idx)), xi=jnp.asarray(onehot), enc=scale)
    net = make_network("fqe", GAMMA, (64, 64), 16, 1).clone(out_scale=1 / (1 - GAMMA))
    cfg = dope(FQEConfig(gamma=GAMMA))
    assert cfg.clip_targets and cfg.tau == 0.005 and cfg.weight_decay > 0
    state = make_initializer(net, cfg)(jax.random.PRNGKey(5)[None], data)
    state, _ = make_trainer(net, cfg, 8000)(state, data, jax.random.PRNGKey(6)[None])
    pred = np.asarray(make_predictor(net)(state.params, jnp.asarray(onehot), data.xi, scale))[0, :, 0]
    truth = np.linalg.solve(np.eye(len(onehot)) - GAMMA * P_pi, np.asarray(r[0]))
    assert np.sqrt(np.mean((pred - truth) ** 2)) / np.std(truth) < 0.1

    one = jax.tree_util.tree_map(lambda a: a[0], state)
    far = jnp.full((1, 1), 1e4)                                                  # the target net's level
    hi = float(r[:, idx].max()) / (1 - GAMMA)
    loss_args = (one.params, one.params, net, cfg, data._replace(enc=far), jnp.arange(8), jax.random.PRNGKey(0))
    g = np.asarray(net.apply(one.params, data.x[:8], data.xi, far))[:, 0]
    assert float(fqe_loss(*loss_args)) == pytest.approx(np.mean((g - hi) ** 2), rel=1e-4)
    g_next = np.asarray(net.apply(one.params, data.xn[:8], data.xi, far))[:, 0]
    y = np.asarray(r[0, idx[:8]]) + GAMMA * g_next                              # above hi: unclipped
    unclipped = dataclasses.replace(cfg, clip_targets=False)
    assert y.min() > hi and float(fqe_loss(*loss_args[:3], unclipped, *loss_args[4:])) == pytest.approx(
        np.mean((g - y) ** 2), rel=1e-4)
    with pytest.raises(ValueError, match="generic prior"):
        FQEConfig(clip_targets=True, prior=PriorConfig(kind="generic"))


def test_generic_prior_alone_teaches_the_operator_unseen_rewards():
    """Trained on generic random rewards only (no family), the attention operator answers
    unseen rewards on a tabular MDP: a prior that covers the reward space is enough."""
    from resolvent.rewards import PriorData

    onehot, idx, nxt, P_pi = tabular_problem(0)
    n_x = len(onehot)
    z = jnp.asarray(onehot * 2.0 - 1.0)                                         # (n_x, n_x) inputs
    data = OperatorData(x=jnp.asarray(onehot[idx]), xn=jnp.asarray(onehot[nxt]),
                        rewards=jnp.zeros((0, len(idx))), done=jnp.zeros(len(idx)),
                        xi=jnp.asarray(onehot), enc=jnp.zeros((0, n_x)),
                        prior=PriorData(z[idx], z, jnp.ones(n_x)))
    net = make_network("attention", GAMMA, (64, 64), 16, 1)
    cfg = FQEConfig(gamma=GAMMA, tau=0.05, prior=PriorConfig(kind="generic", n_generic=32, max_dims=3))
    state = make_initializer(net, cfg)(jax.random.PRNGKey(7)[None], data)
    state, _ = make_trainer(net, cfg, 4000)(state, data, jax.random.PRNGKey(8)[None])
    r_test = jax.random.normal(jax.random.PRNGKey(9), (16, n_x))
    pred = np.asarray(make_predictor(net)(state.params, jnp.asarray(onehot), data.xi, r_test))[0]
    truth = np.linalg.solve(np.eye(n_x) - GAMMA * P_pi, np.asarray(r_test).T)
    assert np.sqrt(np.mean((pred - truth) ** 2)) / np.std(truth) < 0.15
