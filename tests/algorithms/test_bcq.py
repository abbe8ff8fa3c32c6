"""Operator BCQ: shapes, bounds, determinism, and that its parts learn what they should."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.algorithms import bcq
from resolvent.config import from_dict
from resolvent.operators import make_network

DS, DA, N, M, R = 3, 2, 512, 16, 4


def problem(seed=0, critic="maxout"):
    k = jax.random.split(jax.random.PRNGKey(seed), 6)
    s = jax.random.normal(k[0], (N, DS))
    a = jnp.tanh(s[:, :DA] + 0.1 * jax.random.normal(k[1], (N, DA)))   # behaviour: a ~ tanh(s)
    r = jax.random.normal(k[2], (R, N))
    ref = jnp.arange(M) * (N // M)
    xi = jnp.concatenate([s[ref], a[ref]], -1)
    data = bcq.BCQData(s=s, a=a, next_s=jax.random.normal(k[3], (N, DS)), rewards=r,
                       done=jnp.zeros(N), xi=xi, enc=r[:, ref], a_shift=jnp.zeros(DA),
                       a_scale=jnp.ones(DA))
    config = bcq.BCQConfig(batch_size=64, n_samples=3, eval_samples=7)
    nets = bcq.make_nets(make_network(critic, 0.9, (32,), 8, 0, heads=2), DA, config,
                         vae_hidden=(32, 32), actor_hidden=(32,), features=8)
    return data, config, nets


@pytest.mark.parametrize("critic", ["maxout", pytest.param("vanilla", marks=pytest.mark.slow)])
def test_train_is_deterministic_seed_dependent_and_finite(critic):
    data, config, nets = problem(critic=critic)
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    init, train = bcq.make_initializer(nets, config), bcq.make_trainer(nets, config, 5)
    (s1, l1), (_, l2) = train(init(keys, data), data, keys), train(init(keys, data), data, keys)
    np.testing.assert_array_equal(l1, l2)
    assert l1[0] != l1[1] and np.all(np.isfinite(l1))
    assert int(s1.step[0]) == 5
    critic_leaf = jax.tree_util.tree_leaves(s1.critic)[0]
    assert critic_leaf.shape[:2] == (2, 2)                          # (seeds, twin critics)


def test_actions_stay_in_bounds_and_perturbation_is_small():
    data, config, nets = problem()
    state = bcq.init(nets, config, jax.random.PRNGKey(0), data)
    s, enc = data.s[:10], data.enc[jnp.zeros(10, int)]
    a = nets.vae.apply(state.vae, s, jax.random.PRNGKey(2), method=bcq.VAE.decode)
    perturbed = nets.actor.apply(state.actor, s, a, data.enc, jnp.arange(10) % R)
    assert np.all(np.abs(perturbed - a) <= config.phi + 1e-6)
    act = bcq.make_act(nets, config.eval_samples, np.array([-2.0, 0.0]), np.array([2.0, 1.0]),
                       np.zeros(DA), np.ones(DA))
    raw = np.asarray(act(bcq.policy_params(state), s, data.xi, enc, jax.random.PRNGKey(3)))
    assert raw.shape == (10, DA)
    assert np.all(raw[:, 0] >= -2) and np.all(raw[:, 0] <= 2) and np.all(raw[:, 1] >= 0) and np.all(raw[:, 1] <= 1)


def test_vae_imitates_the_data_actions():
    data, config, nets = problem()
    config = bcq.BCQConfig(batch_size=128, n_samples=2)
    state = bcq.make_initializer(nets, config)(jax.random.PRNGKey(0)[None], data)
    decode = lambda st: nets.vae.apply(jax.tree_util.tree_map(lambda p: p[0], st.vae),  # noqa: E731
                                       data.s, jax.random.PRNGKey(5), method=bcq.VAE.decode)
    before = float(jnp.mean((decode(state) - data.a) ** 2))
    state, _ = bcq.make_trainer(nets, config, 200)(state, data, jax.random.PRNGKey(1)[None])
    after = float(jnp.mean((decode(state) - data.a) ** 2))
    assert after < 0.3 * before, (before, after)


def test_select_actions_picks_the_best_sample():
    """BCQ's action selection: of the perturbed VAE samples, the one the first critic values most."""
    data, config, nets = problem()
    state = bcq.init(nets, config, jax.random.PRNGKey(0), data)
    params = bcq.policy_params(state)
    s, enc = data.s[:4], data.enc[jnp.zeros(4, int)]
    a = bcq.select_actions(nets, params, s, data.xi, enc, jax.random.PRNGKey(1), 7,
                           data.a_shift, data.a_scale)
    sr, er = jnp.repeat(s, 7, 0), jnp.repeat(enc, 7, 0)
    cand = nets.actor.apply(params["actor"], sr, nets.vae.apply(params["vae"], sr, jax.random.PRNGKey(1),
                                                                method=bcq.VAE.decode), er, jnp.arange(28))
    q1 = nets.critic.apply(jax.tree_util.tree_map(lambda p: p[0], params["critic"]),
                           jnp.concatenate([sr, cand], -1), data.xi, er, paired=True).reshape(4, 7)
    best = cand.reshape(4, 7, DA)[jnp.arange(4), jnp.argmax(q1, 1)]
    np.testing.assert_allclose(a, best, rtol=1e-6)


def test_unknown_config_key():
    with pytest.raises(ValueError, match=r"unknown BCQ config keys \['lambda'\] in BCQConfig"):
        from_dict(bcq.BCQConfig, {"phi": 0.1, "lambda": 0.5}, "BCQ")
