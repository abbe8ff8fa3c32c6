"""Exact properties of the operators scored under the target policy (G = r + gamma U)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolvent.algorithms import policy_fqe
from resolvent.algorithms.fqe import FQEConfig, OperatorData
from resolvent.experiments.policy_refs import PolicyRefs
from resolvent.operators import make_network, widen_heads

GAMMA = 0.9
KERNELS = [("favor", False), ("favor", True), ("pi-attention", False), ("pi-attention", True)]


def setup(method, absorbing, seed, b=5, m=9, dx=3):
    net = make_network(method, GAMMA, (32, 32), 8, 0, absorbing=absorbing, random_features=32)
    k = jax.random.split(jax.random.PRNGKey(seed), 4)
    x, xi = jax.random.normal(k[0], (b, dx)) * 3, jax.random.normal(k[1], (m, dx)) * 3
    return net, net.init(k[2], x, xi, jnp.zeros((1, m))), x, xi, k[3]


seeds = st.integers(0, 2**30)
floats = st.floats(-10, 10, allow_nan=False)


@pytest.mark.parametrize("method,absorbing", KERNELS + [("fb", False)])
@settings(max_examples=5, deadline=None)
@given(seed=seeds, a=floats, b=floats)
def test_linear(method, absorbing, seed, a, b):
    net, params, x, xi, k = setup(method, absorbing, seed)
    r1, r2 = jax.random.normal(k, (2, 1, xi.shape[0])) * 5
    u = lambda r: net.apply(params, x, xi, r)  # noqa: E731
    np.testing.assert_allclose(u(a * r1 + b * r2), a * u(r1) + b * u(r2), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("method,absorbing", KERNELS)
@settings(max_examples=5, deadline=None)
@given(seed=seeds)
def test_monotone(method, absorbing, seed):
    net, params, x, xi, k = setup(method, absorbing, seed)
    k1, k2 = jax.random.split(k)
    r = jax.random.normal(k1, (1, xi.shape[0])) * 5
    delta = jnp.abs(jax.random.normal(k2, (1, xi.shape[0])))
    assert bool(jnp.all(net.apply(params, x, xi, r + delta) >= net.apply(params, x, xi, r) - 1e-3))


@pytest.mark.parametrize("method", ["favor", "pi-attention"])
@settings(max_examples=5, deadline=None)
@given(seed=seeds, c=floats)
def test_constant_maps_to_c_over_one_minus_gamma(method, seed, c):
    """G[c] = c + gamma U[c] = c + gamma c/(1-gamma) = c/(1-gamma)."""
    net, params, x, xi, _ = setup(method, False, seed)
    g = c + GAMMA * net.apply(params, x, xi, jnp.full((1, xi.shape[0]), c))
    np.testing.assert_allclose(g, c / (1 - GAMMA), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("method", ["favor", "pi-attention"])
def test_absorbing_slot_takes_mass_and_stays_a_sub_probability(method):
    net, params, x, xi, _ = setup(method, True, 3)
    w = np.asarray(net.apply(params, x, xi, jnp.ones((1, xi.shape[0])))) * (1 - GAMMA)   # total mass
    assert np.all(w > 0) and np.all(w < 1)


@pytest.mark.parametrize("method", ["favor", "pi-attention", "fb"])
def test_cached_keys_give_the_same_answer(method):
    """An inference model caches the keys of its N reference points: keys -> summary -> answer
    equals the one-call operator."""
    net, params, x, xi, k = setup(method, method != "fb", 5)
    r = jax.random.normal(k, (3, xi.shape[0]))
    keys = net.apply(params, xi, method=lambda m, v: m.keys(v))
    summary = net.apply(params, keys, r, method=lambda m, a, b: m.summary(a, b))
    np.testing.assert_allclose(net.apply(params, x, summary, method=lambda m, a, b: m.answer(a, b)),
                               net.apply(params, x, xi, r), rtol=1e-5, atol=1e-5)


def test_kernel_references_are_never_terminal_states():
    """A terminal next state's reward is never collected: the favor loss draws its fresh reference
    states among non-terminal transitions only, and the inference pool of a kernel method skips
    them (fb keeps every next state: its measure is relative to all of them)."""
    n, dx = 40, 3
    done = jnp.asarray(np.arange(n) % 2, jnp.float32)                      # odd transitions terminate
    xn = jnp.asarray(np.random.default_rng(0).normal(size=(n, dx)), jnp.float32)
    seen = []

    class Spy:                                                             # records the references a loss uses
        def apply(self, params, x, xi, r):
            seen.append(np.asarray(xi))
            return jnp.zeros((x.shape[0], r.shape[0]))

    data = OperatorData(x=xn, xn=xn, rewards=jnp.ones((1, n)), done=done, xi=xn[:4], enc=jnp.ones((1, 4)))
    loss = policy_fqe.make_loss(n_refs=64)
    loss({}, {}, Spy(), FQEConfig(), data, jnp.arange(8), jax.random.PRNGKey(3))
    rows = {tuple(np.round(r, 5)) for r in seen[0]}
    live_rows = {tuple(np.round(r, 5)) for r in np.asarray(xn)[::2]}
    assert rows <= live_rows and len(rows) > 10

    refs = PolicyRefs(model=None, features={}, pool=np.array([5, 2, 7, 4]), values={}, z=np.zeros((n, 1)),
                      live=np.array([False, True, False, True]))
    np.testing.assert_array_equal(refs.pool[refs.pool_for(kernel=True)], [2, 4])
    np.testing.assert_array_equal(refs.pool[refs.pool_for(kernel=False)], [5, 2, 7, 4])


@pytest.mark.parametrize("method,absorbing", KERNELS)
def test_widened_kernel_operator_is_the_same_operator(method, absorbing):
    """``widen_heads``: H kernels copied c times, each copy's mixture weight pi_h / c, give the same
    U exactly (noise 0; with the absorbing slot's keys copied too), with the copies moved apart by
    a little noise nearly the same, and their features no longer equal; only multiples of H."""
    net, params, x, xi, k = setup(method, absorbing, 3)
    r = jax.random.normal(k, (2, xi.shape[0])) * 5
    wide_net = make_network(method, GAMMA, (32, 32), 8, 0, absorbing=absorbing, random_features=32, kernel_heads=12)
    same = widen_heads(params, 2, 4, 8, 12, jax.random.PRNGKey(0), noise=0.0)
    moved = widen_heads(params, 2, 4, 8, 12, jax.random.PRNGKey(0))
    u = net.apply(params, x, xi, r)                                                   # (b, R)
    np.testing.assert_allclose(wide_net.apply(same, x, xi, r), u, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(wide_net.apply(moved, x, xi, r), u, rtol=0.05, atol=0.05)
    head = moved["params"]["f"]["Dense_2"]["kernel"].reshape(32, 4, 3, 8)              # (hid, H, c, F)
    assert np.array_equal(head[:, :, 0], params["params"]["f"]["Dense_2"]["kernel"].reshape(32, 4, 8))
    assert not np.allclose(head[:, :, 1], head[:, :, 0])
    with pytest.raises(ValueError, match="multiple of its 4 kernels"):
        widen_heads(params, 2, 4, 8, 6, jax.random.PRNGKey(0))
