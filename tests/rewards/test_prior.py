"""The generic reward prior: finite, deterministic for a seed, different across seeds,
the same after save/load; probe rewards checked; R^2 and MSE exact."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.config import from_dict
from resolvent.evaluation import mse, r2
from resolvent.families import get_family
from resolvent.rewards import PriorConfig, PriorStats, evaluate_reward, generic_rewards, reward_inputs
from resolvent.rewards import prior as P
from resolvent.transitions import Member
from resolvent.rewards import probes


def features(n=500, seed=0):
    rng = np.random.default_rng(seed)
    return {"obs": rng.normal(size=(n, 3)).astype(np.float32) * [1, 2, 5],
            "action": rng.uniform(-2, 2, size=(n, 1)).astype(np.float32),
            "next_obs": rng.normal(size=(n, 3)).astype(np.float32),
            "x_velocity": rng.normal(size=n).astype(np.float32),
            "stuck": np.zeros(n, np.float32)}


def stats_and_z(f):
    z = reward_inputs(f, ("x_velocity", "stuck"))
    return PriorStats.fit(z, ("x_velocity", "stuck")), z


def test_generic_rewards_are_finite_deterministic_and_seed_dependent():
    f = features()
    stats, z = stats_and_z(f)
    cfg = PriorConfig(kind="generic", n_generic=8)

    def vals(seed):
        return np.stack([np.asarray(g(f)) for g in generic_rewards(cfg, jax.random.PRNGKey(seed), stats, z, 64)])

    a, b, c = vals(0), vals(0), vals(1)
    assert a.shape == (64, 500) and np.all(np.isfinite(a))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert np.mean(np.std(a, axis=1) > 1e-3) > 0.9        # they vary over the data
    # a constant input ("stuck") is never read
    assert not stats.usable[-1]
    params = P.sample(cfg, jax.random.PRNGKey(0), stats.data(z, z[:10]), 256)
    assert float(jnp.max(params.mask[:, -1])) == 0.0
    assert set(np.asarray(params.mask.sum(1)).astype(int)) <= {1, 2}


def test_step_draws_match_the_callables():
    """What a training step sees (values on the batch and at the reference points) is the
    same reward as the callable over raw features."""
    f = features()
    stats, z = stats_and_z(f)
    cfg = PriorConfig(kind="generic", n_generic=5)
    ref = np.arange(0, 500, 7)
    data = stats.data(z, z[ref])
    idx = jnp.arange(20)
    key = jax.random.PRNGKey(3)
    r_b, enc = P.draw(cfg, key, data, idx)                                  # (20, 5) (5, m)
    params = P.sample(cfg, key, data, 5)
    for k in range(5):
        g = P.GenericReward(stats, jax.tree_util.tree_map(lambda a, k=k: a[k:k + 1], params))
        full = np.asarray(g(f))
        np.testing.assert_allclose(np.asarray(r_b[:, k]), full[:20], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(enc[k]), full[ref], rtol=1e-4, atol=1e-5)


def test_stats_save_load(tmp_path):
    stats, z = stats_and_z(features())
    stats.save(tmp_path / "prior.npz")
    back = PriorStats.load(tmp_path / "prior.npz")
    for a, b in zip(stats[:3], back[:3]):
        np.testing.assert_array_equal(a, b)
    assert back.extras == stats.extras
    assert not list(tmp_path.glob("*.tmp"))


def test_bad_prior_config():
    with pytest.raises(ValueError, match="unknown reward prior 'gaussian'"):
        PriorConfig(kind="gaussian")
    with pytest.raises(ValueError, match="n_generic .* must be >= 1, got 0"):
        PriorConfig(n_generic=0)
    with pytest.raises(ValueError, match=r"unknown reward prior config keys \['width'\] in PriorConfig"):
        from_dict(PriorConfig, {"width": 3}, "reward prior")


def test_r2_and_mse_exact():
    truth = jnp.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 2.0, 2.0]])
    pred = jnp.array([[1.0, 2.0, 3.0, 5.0], [1.0, 1.0, 1.0, 1.0]])
    np.testing.assert_allclose(np.asarray(mse(pred, truth)), [0.25, 1.0])
    # Var(truth) = 1.25 and 1.0: R^2 = 1 - 0.25/1.25 = 0.8; the constant mean gives 0
    np.testing.assert_allclose(np.asarray(r2(pred, truth)), [0.8, 0.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(r2(truth, truth)), [1.0, 1.0])


@pytest.mark.parametrize("family", ["pendulum-angle", "halfcheetah-vel", "ant-dir"])
def test_every_family_has_six_probes_of_finite_values(family):
    probes = get_family(family).probe_rewards()
    assert len(probes) >= 6
    rng = np.random.default_rng(0)
    ds = {"pendulum-angle": 3, "halfcheetah-vel": 17, "ant-dir": 105}[family]
    da = {"pendulum-angle": 1, "halfcheetah-vel": 6, "ant-dir": 8}[family]
    f = {"obs": rng.normal(size=(50, ds)), "action": rng.normal(size=(50, da)),
         "next_obs": rng.normal(size=(50, ds)), "x_velocity": rng.normal(size=50),
         "y_velocity": rng.normal(size=50), "terminated": np.zeros(50)}
    for name, reward in probes.items():
        assert evaluate_reward(reward, f, "transitions", name).shape == (50,)


def test_bad_probe_rewards_get_one_clear_error():
    f = features(10)
    with pytest.raises(ValueError, match=r"probe 'p' returned shape \(10, 3\)"):
        evaluate_reward(lambda g: g["obs"], f, "transitions", "probe 'p'")
    with pytest.raises(ValueError, match="probe 'p' returned non-finite values"):
        evaluate_reward(lambda g: g["obs"][:, 0] / 0.0, f, "transitions", "probe 'p'")
    with pytest.raises(ValueError, match="probe 'p' asked for 'height'"):
        evaluate_reward(lambda g: g["height"], f, "transitions", "probe 'p'")


def test_a_reward_over_many_rows_is_compiled_with_the_same_values_and_errors():
    """From COMPILE_ROWS rows a reward runs compiled: the same values as written (a fused chain may
    round differently in the last place); one JAX cannot trace (a branch on values, numpy) runs as
    written; every error still names the reward."""
    n = probes.COMPILE_ROWS
    rng = np.random.default_rng(0)
    f = {"obs": rng.normal(size=(n, 3)).astype(np.float32), "action": rng.normal(size=(n, 1)).astype(np.float32)}
    reward = get_family("pendulum-angle").probe_rewards()["side-bump"]
    want = np.asarray(reward(probes.Columns(f)))
    np.testing.assert_allclose(np.asarray(evaluate_reward(reward, f, "rows")), want, rtol=1e-5, atol=1e-6)

    def branching(g):                       # a Python branch on values: not traceable
        return g["obs"][:, 0] * (2.0 if float(g["obs"][0, 0]) > -100 else 0.0)

    def numpy_reward(g):                    # numpy on the values: not traceable
        return np.cos(np.asarray(g["obs"][:, 1]))

    np.testing.assert_array_equal(np.asarray(evaluate_reward(branching, f, "rows")), 2 * f["obs"][:, 0])
    np.testing.assert_allclose(np.asarray(evaluate_reward(numpy_reward, f, "rows")), np.cos(f["obs"][:, 1]), rtol=1e-6)
    with pytest.raises(ValueError, match="probe 'p' asked for 'height'"):
        evaluate_reward(lambda g: g["height"], f, "rows", "probe 'p'")
    with pytest.raises(ValueError, match="probe 'p' failed on the rows: RuntimeError: boom"):
        evaluate_reward(lambda g: (_ for _ in ()).throw(RuntimeError("boom")), f, "rows", "probe 'p'")
    with pytest.raises(ValueError, match="probe 'p' returned non-finite values"):
        evaluate_reward(lambda g: g["obs"][:, 0] / 0.0, f, "rows", "probe 'p'")


def test_reads_takes_only_the_quantities_a_reward_reads():
    """``reads`` names what a reward reads and takes nothing else from the features: a Mapping that
    makes its quantities when read (a long rollout's chunk) makes only those."""
    made = []

    class Lazy(dict):
        def __getitem__(self, key):
            made.append(key)
            return super().__getitem__(key)

    f = Lazy(features(10))
    assert probes.reads(lambda g: g["obs"][:, 0] * g["action"][:, 0], f) == {"obs", "action"}
    assert sorted(made) == ["action", "obs"]
    assert probes.reads(lambda g: g["height"], f) == set(f)                  # fails on two rows: every key


def test_inputs_unknown_at_a_reference_point_are_never_read():
    """Reference points with the target policy's action have no extras (NaN): generic rewards
    then read only the inputs known everywhere, and their values stay finite."""
    f = features()
    stats, z = stats_and_z(f)
    z_xi = z[:8].copy()
    z_xi[1::2, 4] = np.nan                                     # x_velocity unknown at half of them
    data = stats.data(z, z_xi)
    assert float(data.usable[4]) == 0.0 and float(data.usable[0]) == 1.0
    r_b, enc = P.draw(PriorConfig(kind="generic", n_generic=64), jax.random.PRNGKey(0), data, jnp.arange(5))
    assert np.all(np.isfinite(np.asarray(enc))) and np.all(np.isfinite(np.asarray(r_b)))


def test_a_compiled_reward_is_traced_for_its_reads_once():
    """The chunks of one long rollout, and later evaluations of the same reward, trace it on two
    rows once (``_read_keys``): what it reads is known by then. Another set of quantities asks again."""
    calls = []

    def reward(g):
        calls.append(1)
        return g["obs"][:, 0] * g["action"][:, 0]

    f = features(10)
    for _ in range(3):
        np.testing.assert_allclose(np.asarray(evaluate_reward(reward, f, "rows", compiled=True)),
                                   f["obs"][:, 0] * f["action"][:, 0], rtol=1e-6)
    assert len(calls) == 2                   # one trace on two rows for the reads, one compile
    evaluate_reward(reward, {**f, "extra": f["obs"][:, 0]}, "rows", compiled=True)
    assert len(calls) == 3                   # new quantities: read again (same shapes: no compile)


def test_a_family_member_is_compiled_once_for_every_member():
    """Members of one family (``transitions.Member``) share their family's function: from
    ``MEMBER_ROWS`` rows it is compiled once, the parameter an argument, and every member's values
    are its own (those of the member as written); below, a member runs as written."""
    traced = []

    def family(p, g):
        traced.append(1)
        return g["obs"][:, 0] * p - g["action"][:, 0] ** 2

    f = features(probes.MEMBER_ROWS)
    for param in (0.5, -2.0, 3.25):
        member = Member(family, param)
        np.testing.assert_allclose(np.asarray(evaluate_reward(member, f, "rows")),
                                   f["obs"][:, 0] * param - f["action"][:, 0] ** 2, rtol=1e-6)
    assert len(traced) == 2                  # one trace on two rows for the reads, one compile for all three
    few = features(8)
    evaluate_reward(Member(family, 1.0), few, "rows")
    assert len(traced) == 3                  # below MEMBER_ROWS: as written, no compile
    assert get_family("pendulum-angle").reward_callable(0.3) == Member(get_family("pendulum-angle").reward, 0.3)
