"""The expansion distilled into the operator (``algorithms/distil.py``): the student learns a
realisable target, stays constant-exact and linear by architecture, is deterministic, and its
configuration refuses bad values."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.algorithms import distil
from resolvent.algorithms.distil import DistilConfig, DistilData, target_weights
from resolvent.experiments import EvaluateConfig
from resolvent.operators import make_network

GAMMA = 0.9


def setup():
    net = make_network("favor", GAMMA, (32,), 8, 1, random_features=32, kernel_heads=2)
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    x, ref_x = jax.random.normal(k[0], (64, 3)), jax.random.normal(k[1], (128, 3))     # (P, dx) (N, dx)
    ref_r = jax.random.normal(k[2], (6, 128))                                            # (R, N)
    init = jax.vmap(lambda key: net.init(key, x[:1], ref_x[:4], ref_r[:, :4]))
    student = init(jax.random.split(k[3], 2))                                            # 2 seeds
    teacher = init(jax.random.split(k[4], 2))
    u = jax.vmap(lambda p: net.apply(p, x, ref_x, ref_r).T)(teacher)                     # (S, R, P): realisable
    return net, student, DistilData(x, u, ref_x, ref_r, target_weights(u))


def full_loss(net, params, data):
    return jax.vmap(lambda p, u, w: distil.loss(p, net, data._replace(u=u, weight=w), jnp.arange(64),
                                                jnp.arange(128)))(params, data.u, data.weight)


def test_student_learns_a_realisable_target_and_is_deterministic():
    net, params, data = setup()
    config = DistilConfig(horizon=1, steps=300, lr=3e-3, batch_size=32, n_refs=64)
    trained, losses = distil.train(params, net, config, data, jax.random.PRNGKey(1))
    assert losses.shape == (2, 300)
    before, after = full_loss(net, params, data), full_loss(net, trained, data)
    assert np.all(np.asarray(after) < 0.5 * np.asarray(before)), (before, after)
    again, _ = distil.train(params, net, config, data, jax.random.PRNGKey(1))
    for a, b in zip(jax.tree_util.tree_leaves(trained), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(a, b)


def test_student_stays_linear_and_constant_exact():
    """The student is the operator's network: U[c] = c / (1 - gamma) and U linear in r, after
    distillation as before."""
    net, params, data = setup()
    trained, _ = distil.train(params, net, DistilConfig(horizon=1, steps=50, lr=3e-3, batch_size=32, n_refs=64),
                              data, jax.random.PRNGKey(2))
    p = jax.tree_util.tree_map(lambda v: v[0], trained)
    const = jnp.full((1, 128), 2.5)
    np.testing.assert_allclose(net.apply(p, data.x, data.ref_x, const), 2.5 / (1 - GAMMA), rtol=1e-4)
    r1, r2 = data.ref_r[:1], data.ref_r[1:2]
    np.testing.assert_allclose(net.apply(p, data.x, data.ref_x, 2 * r1 - 3 * r2),
                               2 * net.apply(p, data.x, data.ref_x, r1) - 3 * net.apply(p, data.x, data.ref_x, r2),
                               rtol=1e-4, atol=1e-4)


def test_target_weights_count_every_reward_alike():
    u = jnp.stack([jnp.linspace(0, 1, 50), 100 * jnp.linspace(0, 1, 50)])                  # (R, P)
    w = target_weights(u)
    np.testing.assert_allclose(w.mean(), 1.0, rtol=1e-6)
    assert w[0] > 100 * w[1]


@pytest.mark.parametrize("field,value", [("horizon", -1), ("points", 0), ("steps", 0), ("rewards", 1.5),
                                         ("lr", 0.0), ("batch_size", True), ("along", 5), ("along", -1),
                                         ("along_every", 0), ("kernel_heads", -1), ("kernel_heads", 2.0)])
def test_config_refuses_bad_values(field, value):
    with pytest.raises(ValueError, match=f"distil.{field}"):
        DistilConfig(**{field: value})


def test_along_stays_inside_the_rollout():
    assert DistilConfig(horizon=10, along=9).along == 9
    with pytest.raises(ValueError, match="distil.along must be an integer from 0 to horizon - 1 = 9"):
        DistilConfig(horizon=10, along=10)


def test_a_wider_student_is_a_multiple_of_the_operators_kernels():
    assert EvaluateConfig(distil=DistilConfig(horizon=10, kernel_heads=8)).distil.kernel_heads == 8
    with pytest.raises(ValueError, match="give a multiple of 4"):
        EvaluateConfig(distil=DistilConfig(horizon=10, kernel_heads=6))
