"""Exact properties of the attention operator (paper, Proposition 1), for random networks."""
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from resolvent.operators import AttentionOperator, make_network

GAMMA = 0.9
NET = AttentionOperator(gamma=GAMMA, hidden=(32, 32), features=8)


def setup(seed, b=5, m=7, dx=3):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    x, xi = jax.random.normal(k[0], (b, dx)) * 3, jax.random.normal(k[1], (m, dx)) * 3
    params = NET.init(k[2], x, xi, jnp.zeros((1, m)))
    return params, x, xi, k[3]


seeds = st.integers(0, 2**30)
floats = st.floats(-10, 10, allow_nan=False)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, a=floats, b=floats)
def test_linear(seed, a, b):
    params, x, xi, k = setup(seed)
    r1, r2 = jax.random.normal(k, (2, 1, xi.shape[0])) * 5
    g = lambda r: NET.apply(params, x, xi, r)  # noqa: E731
    np.testing.assert_allclose(g(a * r1 + b * r2), a * g(r1) + b * g(r2), rtol=1e-4, atol=1e-3)


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_monotone(seed):
    params, x, xi, k = setup(seed)
    k1, k2 = jax.random.split(k)
    r = jax.random.normal(k1, (1, xi.shape[0])) * 5
    delta = jnp.abs(jax.random.normal(k2, (1, xi.shape[0])))
    assert bool(jnp.all(NET.apply(params, x, xi, r + delta) >= NET.apply(params, x, xi, r) - 1e-4))


@settings(max_examples=25, deadline=None)
@given(seed=seeds, c=floats)
def test_constant_maps_to_c_over_one_minus_gamma(seed, c):
    params, x, xi, _ = setup(seed)
    out = NET.apply(params, x, xi, jnp.full((1, xi.shape[0]), c))
    np.testing.assert_allclose(out, c / (1 - GAMMA), rtol=1e-5, atol=1e-4)


def test_linear_operator_is_linear_but_not_constant_preserving():
    net = make_network("linear", GAMMA, (16,), 4, 0)
    params, x, xi, k = setup(1)
    params = net.init(jax.random.PRNGKey(0), x, xi, jnp.zeros((1, xi.shape[0])))
    r1, r2 = jax.random.normal(k, (2, 1, xi.shape[0]))
    g = lambda r: net.apply(params, x, xi, r)  # noqa: E731
    np.testing.assert_allclose(g(2 * r1 - r2), 2 * g(r1) - g(r2), rtol=1e-4, atol=1e-4)
    assert not np.allclose(g(jnp.ones((1, xi.shape[0]))), 1 / (1 - GAMMA))


def test_output_shapes():
    b, m, dx, R = 6, 9, 4, 3
    x, xi = jnp.ones((b, dx)), jnp.ones((m, dx))
    for method in ("attention", "linear", "vanilla"):
        net = make_network(method, 0.99, (8,), 4, R)
        p = net.init(jax.random.PRNGKey(0), x, xi, jnp.ones((R, m)))
        assert net.apply(p, x, xi, jnp.ones((R, m))).shape == (b, R)
    net = make_network("sf", 0.99, (8,), 4, 5)
    p = net.init(jax.random.PRNGKey(0), x, xi, jnp.ones((R, 5)))
    assert net.apply(p, x, xi, jnp.ones((R, 5))).shape == (b, R)


ABSORBING = AttentionOperator(gamma=GAMMA, hidden=(32, 32), features=8, absorbing=True)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, a=floats, c=st.floats(0.1, 10))
def test_absorbing_slot_linear_monotone_and_below_c(seed, a, c):
    """With the absorbing-state slot (reward 0 there) G stays linear and monotone in r, and a
    constant c > 0 maps into (0, c/(1-gamma)]: the mass a terminating episode never collects."""
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    x, xi = jax.random.normal(k[0], (5, 3)) * 3, jax.random.normal(k[1], (7, 3)) * 3
    params = ABSORBING.init(k[2], x, xi, jnp.zeros((1, 7)))
    params["params"]["absorbing_key"] = jax.random.normal(k[3], (8,))          # a learned, non-zero key
    g = lambda r: ABSORBING.apply(params, x, xi, r)  # noqa: E731
    r1, r2 = jax.random.normal(k[3], (2, 1, 7)) * 5
    np.testing.assert_allclose(g(a * r1 + r2), a * g(r1) + g(r2), rtol=1e-4, atol=1e-3)
    assert bool(jnp.all(g(r1 + jnp.abs(r2)) >= g(r1) - 1e-4))
    out = g(jnp.full((1, 7), c))
    # at most c/(1-gamma): equal in float32 where the slot's weight underflows (a far absorbing key)
    assert bool(jnp.all(out > 0)) and bool(jnp.all(out <= c / (1 - GAMMA) * (1 + 1e-6)))
