"""Exact properties of the max-out operator (paper, Proposition 2), for random networks."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolvent.operators import AttentionOperator, MaxOutOperator, make_network

GAMMA = 0.9
NET = MaxOutOperator(gamma=GAMMA, hidden=(32, 32), features=8, heads=4)


def setup(seed, b=5, m=7, dx=3):
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    x, xi = jax.random.normal(k[0], (b, dx)) * 3, jax.random.normal(k[1], (m, dx)) * 3
    params = NET.init(k[2], x, xi, jnp.zeros((1, m)))
    return params, x, xi, k[3]


def rewards(key, m, n=1, scale=5.0):
    return jax.random.normal(key, (n, m)) * scale


seeds = st.integers(0, 2**30)
floats = st.floats(-10, 10, allow_nan=False)
nonneg = st.floats(0, 10, allow_nan=False)


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_subadditive(seed):
    params, x, xi, k = setup(seed)
    r1, r2 = jax.random.normal(k, (2, 1, xi.shape[0])) * 5
    g = lambda r: NET.apply(params, x, xi, r)  # noqa: E731
    assert bool(jnp.all(g(r1 + r2) <= g(r1) + g(r2) + 1e-3))


@settings(max_examples=25, deadline=None)
@given(seed=seeds, a=nonneg)
def test_positively_homogeneous(seed, a):
    params, x, xi, k = setup(seed)
    r = rewards(k, xi.shape[0])
    g = lambda r: NET.apply(params, x, xi, r)  # noqa: E731
    np.testing.assert_allclose(g(a * r), a * g(r), rtol=1e-4, atol=1e-3)


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_monotone(seed):
    params, x, xi, k = setup(seed)
    k1, k2 = jax.random.split(k)
    r = rewards(k1, xi.shape[0])
    delta = jnp.abs(jax.random.normal(k2, (1, xi.shape[0])))
    assert bool(jnp.all(NET.apply(params, x, xi, r + delta) >= NET.apply(params, x, xi, r) - 1e-4))


@settings(max_examples=25, deadline=None)
@given(seed=seeds, a=nonneg, c=floats)
def test_constant_rule(seed, a, c):
    """G[a r + c] = a G[r] + c / (1 - gamma) for a >= 0; G[c] = c / (1 - gamma)."""
    params, x, xi, k = setup(seed)
    r = rewards(k, xi.shape[0])
    g = lambda r: NET.apply(params, x, xi, r)  # noqa: E731
    np.testing.assert_allclose(g(a * r + c), a * g(r) + c / (1 - GAMMA), rtol=1e-4, atol=2e-3)
    np.testing.assert_allclose(g(jnp.full_like(r, c)), c / (1 - GAMMA), rtol=1e-5, atol=1e-4)


def test_is_the_max_of_its_attention_copies_and_not_linear():
    params, x, xi, k = setup(3)
    r = rewards(k, xi.shape[0], n=6)
    w = NET.apply(params, x, xi, method=NET.weights)                      # (b, K, m)
    assert w.shape == (5, 4, 7)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)
    per_copy = jnp.einsum("bkm,rm->bkr", w, r) / (1 - GAMMA)
    np.testing.assert_allclose(NET.apply(params, x, xi, r), per_copy.max(1), rtol=1e-5, atol=1e-4)
    g = lambda r: NET.apply(params, x, xi, r)  # noqa: E731
    assert not np.allclose(g(-r), -g(r), atol=1e-2)   # sub-linear, not linear


def test_one_head_is_an_attention_operator():
    params, x, xi, k = setup(0)
    one = MaxOutOperator(gamma=GAMMA, hidden=(32, 32), features=8, heads=1)
    att = AttentionOperator(gamma=GAMMA, hidden=(32, 32), features=8)
    p = att.init(jax.random.PRNGKey(1), x, xi, jnp.zeros((1, 7)))
    r = rewards(k, 7, n=3)
    np.testing.assert_allclose(one.apply(p, x, xi, r), att.apply(p, x, xi, r), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("method", ["maxout", "vanilla"])
def test_paired_rows_are_the_diagonal(method):
    b, m, dx = 6, 9, 4
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    x, xi, r = jax.random.normal(k[0], (b, dx)), jax.random.normal(k[1], (m, dx)), jax.random.normal(k[2], (b, m))
    net = make_network(method, 0.99, (16,), 4, 0, heads=3)
    p = net.init(jax.random.PRNGKey(1), x, xi, r)
    full = net.apply(p, x, xi, r)                                         # (b, b)
    paired = net.apply(p, x, xi, r, paired=True)                          # (b,)
    assert full.shape == (b, b) and paired.shape == (b,)
    np.testing.assert_allclose(paired, jnp.diagonal(full), rtol=1e-5, atol=1e-4)


def test_bad_heads():
    with pytest.raises(ValueError, match="heads"):
        make_network("maxout", 0.99, (8,), 4, 0, heads=0)
