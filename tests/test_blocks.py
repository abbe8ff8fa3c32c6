"""Row-wise functions in blocks of rows: the same answers as on all rows at once, any row count."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.algorithms import onestep
from resolvent.blocks import in_blocks
from resolvent.policies.actor import Actor, _act


def mlp(params, x):
    """A row-wise two-layer network: (..., n, 3) -> (..., n, 2)."""
    (w1, b1), (w2, b2) = params
    return jnp.tanh(x @ w1 + b1) @ w2 + b2


@pytest.fixture(scope="module")
def params():
    rng = np.random.default_rng(0)
    return [(jnp.asarray(rng.normal(size=(3, 16)), jnp.float32), jnp.asarray(rng.normal(size=16), jnp.float32)),
            (jnp.asarray(rng.normal(size=(16, 2)), jnp.float32), jnp.asarray(rng.normal(size=2), jnp.float32))]


@pytest.mark.parametrize("n", [1, 4, 5, 7, 8, 9, 33])
def test_blocks_answer_as_all_rows_at_once(params, n):
    """Every row count, whole blocks or not (the last padded by repeating a row), fewer rows than a block."""
    x = jnp.asarray(np.random.default_rng(n).normal(size=(n, 3)), jnp.float32)
    got = jax.jit(in_blocks(mlp, rows=4, arg=1))(params, x)
    np.testing.assert_allclose(got, mlp(params, x), rtol=1e-6, atol=1e-6)
    assert got.shape == (n, 2)


def test_blocks_along_other_axes_and_pytrees(params):
    """Rows along axis 1 of the input (members first), outputs a pytree with rows on axis 1."""
    x = jnp.asarray(np.random.default_rng(1).normal(size=(3, 10, 3)), jnp.float32)   # (E, n, 3)

    def fn(x, params):
        y = mlp(params, x)                                                          # (E, n, 2)
        return {"y": y, "first": y[..., 0]}

    got = jax.jit(in_blocks(fn, rows=4, axis=1, out_axis=1))(x, params)
    want = fn(x, params)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6)
        assert got[key].shape == want[key].shape


def test_a_block_holds_a_row():
    with pytest.raises(ValueError, match="at least one row"):
        in_blocks(mlp, rows=0)


def test_pi_and_the_ensemble_past_a_block_answer_as_in_small_batches():
    """pi and the one-step ensemble past a block of rows: the same actions and predictions as
    row by row in small batches."""
    rng = np.random.default_rng(2)
    actor = Actor(((rng.normal(size=(3, 8)).astype(np.float32), rng.normal(size=8).astype(np.float32)),
                   (rng.normal(size=(8, 1)).astype(np.float32), rng.normal(size=1).astype(np.float32))),
                  np.array([-2.0], np.float32), np.array([2.0], np.float32))
    obs = rng.normal(size=(5000, 3)).astype(np.float32)                             # more than ROWS
    small = np.concatenate([np.asarray(_act(actor.params(), actor.low, actor.high, obs[i:i + 500]))
                            for i in range(0, 5000, 500)])
    np.testing.assert_allclose(actor(obs), small, rtol=1e-5, atol=1e-6)

    feats = {"obs": obs, "action": rng.normal(size=(5000, 1)).astype(np.float32),
             "next_obs": obs + 0.1 * rng.normal(size=(5000, 3)).astype(np.float32)}
    x_mean, x_std = np.zeros(4, np.float32), np.ones(4, np.float32)
    model = onestep.fit(onestep.OneStepConfig(hidden=(8,), steps=2, ensemble=3, keep=2), jax.random.PRNGKey(0),
                        feats, x_mean, x_std)
    whole = np.asarray(onestep.member_predictions(model, feats["obs"], feats["action"]))      # (E, n, dy)
    parts = np.concatenate([np.asarray(onestep.member_predictions(model, feats["obs"][i:i + 500],
                                                                  feats["action"][i:i + 500]))
                            for i in range(0, 5000, 500)], 1)
    np.testing.assert_allclose(whole, parts, rtol=1e-5, atol=1e-5)
    x = np.concatenate([feats["obs"], feats["action"]], 1)                                    # (n, dx)
    own = np.asarray(onestep._apply(model.hidden, model.params, np.stack([x] * 3), "own"))    # each member its rows
    np.testing.assert_allclose(own, whole, rtol=1e-5, atol=1e-5)
