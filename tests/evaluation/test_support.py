"""The action-support check (``evaluation/support.py``): exact distances, the rule on data whose
behaviour differs from the target, its scales, save/load and bad input."""
import numpy as np
import pytest

from resolvent.evaluation.support import ActionSupport, SupportConfig, build_support
from resolvent.model import CheckpointError, load_support, save_support


def line_support(k: int = 1, ratio: float = 3.0, spread: float = 0.5) -> ActionSupport:
    """States 0, 1, ..., 9 on a line (unit scale), the data's action at state i is i / 10."""
    obs = np.arange(10, dtype=np.float32)[:, None]
    return ActionSupport(obs, obs / 10, np.ones(1, np.float32), 0.1, 0.4, k, ratio, spread)


def test_distance_is_pi_to_the_nearest_action_at_the_k_nearest_states():
    s = line_support(k=1)
    # state 2.2: its nearest data state is 2 (action 0.2); pi's action 0.5 -> 0.3
    np.testing.assert_allclose(s.distances([[2.2]], [[0.5]]), [0.3], atol=1e-6)
    s3 = line_support(k=3)   # states 1, 2, 3 (actions 0.1, 0.2, 0.3): the nearest to 0.5 is 0.3
    np.testing.assert_allclose(s3.distances([[2.2]], [[0.5]]), [0.2], atol=1e-6)
    # a data state compared with the others only: state 4 (action 0.4) with pi's 0.4 -> 0.1 away (state 3 or 5)
    np.testing.assert_allclose(s.distances([[4.0]], [[0.4]]), [0.0], atol=1e-6)
    np.testing.assert_allclose(s.distances([[4.0]], [[0.4]], exclude=np.array([4])), [0.1], atol=1e-6)


def test_threshold_is_the_larger_of_the_two_scales():
    assert line_support(ratio=3.0, spread=0.5).threshold == pytest.approx(max(3 * 0.1, 0.5 * 0.4))
    assert line_support(ratio=1.0, spread=0.5).threshold == pytest.approx(0.2)
    c = line_support(k=1).check([[2.0], [2.0]], [[0.2], [0.9]])      # 0 and 0.7 from the data's 0.2; T = 0.3
    np.testing.assert_allclose(c.relative, [0.0, 0.7 / 0.3], atol=1e-6)
    assert c.unsupported.tolist() == [False, True] and "1 of 2 points (1)" in c.summary()


def behaviour_data(n: int = 4000, seed: int = 0):
    """s ~ U[-1, 1]^2; the behaviour pushes left (a ~ -1) where s_0 < 0 and right (a ~ +1) elsewhere,
    with noise; the target always pushes right."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    act = (np.where(obs[:, :1] < 0, -1.0, 1.0) + 0.1 * rng.normal(size=(n, 1))).astype(np.float32)
    return obs, act


def right(obs):
    return np.ones((len(obs), 1), np.float32)


def test_unsupported_where_the_behaviour_never_took_the_targets_action():
    obs, act = behaviour_data()
    s = build_support(obs, act, obs.std(0), SupportConfig(sample=2000, neighbours=20, calibration=256), 0)
    q = np.array([[-0.6, 0.0], [-0.3, 0.5], [0.3, -0.5], [0.7, 0.2]], np.float32)
    c = s.check(q, right(q))
    assert c.unsupported.tolist() == [True, True, False, False]
    assert c.relative[:2].min() > 2 and c.relative[2:].max() < 0.5


def test_rho_reads_the_same_in_any_unit_of_the_actions_and_states():
    obs, act = behaviour_data()
    cfg = SupportConfig(sample=2000, neighbours=20, calibration=256)
    q = np.random.default_rng(1).uniform(-1, 1, (50, 2)).astype(np.float32)
    base = build_support(obs, act, obs.std(0), cfg, 0).check(q, right(q))
    w = np.array([10.0, 0.1], np.float32)            # states in other units, the scale with them
    scaled = build_support(obs * w, act * 7, obs.std(0) * w, cfg, 0).check(q * w, 7 * right(q))
    np.testing.assert_allclose(scaled.relative, base.relative, rtol=1e-4, atol=1e-6)
    assert scaled.unsupported.tolist() == base.unsupported.tolist()


def test_same_seed_same_check_and_save_load(tmp_path):
    obs, act = behaviour_data()
    cfg = SupportConfig(sample=1000, neighbours=10, calibration=128)
    a, b = (build_support(obs, act, obs.std(0), cfg, 3) for _ in range(2))
    np.testing.assert_array_equal(a.obs, b.obs)
    assert a.unit == b.unit and a.action_spread == b.action_spread
    save_support(a, tmp_path / "models")
    back = load_support(tmp_path / "models")
    q = obs[:20] + 0.01
    np.testing.assert_array_equal(back.check(q, right(q)).relative, a.check(q, right(q)).relative)
    assert load_support(tmp_path / "none") is None                    # a run made before the check
    (tmp_path / "models" / "support.npz").write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="support.npz is corrupt"):
        load_support(tmp_path / "models")


def test_supported_actions_replace_the_unsupported_by_the_datas_nearest():
    """``supported``: an action within T of the data's is kept as it is; one farther becomes the
    action the data took at the K nearest states that is nearest to it."""
    s3 = line_support(k=3)                   # T = 0.3; at state 2.2 the data took 0.1, 0.2 and 0.3
    got = s3.supported([[2.2], [2.2], [2.2], [8.0]], [[0.5], [0.9], [-0.6], [0.75]])
    np.testing.assert_allclose(got, [[0.5], [0.3], [0.1], [0.75]], atol=1e-6)   # 0.2 away: kept; 0.6, 0.7: moved
    obs, act = behaviour_data()
    s = build_support(obs, act, obs.std(0), SupportConfig(sample=2000, neighbours=20, calibration=256), 0)
    q = np.array([[-0.6, 0.0], [0.7, 0.2]], np.float32)
    moved = s.supported(q, right(q))
    assert moved[0, 0] < -0.5 and moved[1, 0] == 1.0      # the left-pushing behaviour's action; pi's own kept
    assert not s.check(q, moved).unsupported.any()
    with pytest.raises(ValueError, match="rollout's actions are not all finite"):
        s.supported(q, np.full((2, 1), np.nan, np.float32))


def test_the_dynamics_switch_is_saved_with_the_check_and_off_in_files_before_it(tmp_path):
    obs, act = behaviour_data()
    cfg = SupportConfig(sample=1000, neighbours=10, calibration=128, dynamics=True)
    save_support(build_support(obs, act, obs.std(0), cfg, 3), tmp_path / "models")
    assert load_support(tmp_path / "models").dynamics
    path = tmp_path / "models" / "support.npz"
    with np.load(path) as z:
        old = {k: z[k] for k in z.files if k != "dynamics"}
    np.savez(path, **old)
    assert not load_support(tmp_path / "models").dynamics


@pytest.mark.parametrize("kwargs, said", [
    ({"neighbours": 0}, "support.neighbours must be an integer >= 1"),
    ({"sample": 10, "neighbours": 10}, "must be below support.sample"),
    ({"ratio": -1.0}, "support.ratio must be >= 0"),
    ({"spread": float("nan")}, "support.spread must be >= 0"),
    ({"ratio": 0.0, "spread": 0.0}, "both 0"),
    ({"calibration": 2.5}, "support.calibration must be an integer"),
])
def test_bad_config_is_named(kwargs, said):
    with pytest.raises(ValueError, match=said):
        SupportConfig(**kwargs)


def test_bad_points_are_named():
    s = line_support()
    with pytest.raises(ValueError, match=r"observations \(b, 1\)"):
        s.check(np.zeros((2, 3)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"target policy's actions \(2, 1\)"):
        s.check(np.zeros((2, 1)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="observations are not all finite"):
        s.check(np.array([[np.nan], [0.0]]), np.zeros((2, 1)))
    obs, act = behaviour_data(n=5)
    with pytest.raises(ValueError, match="the data has 5 transitions"):
        build_support(obs, act, obs.std(0), SupportConfig(neighbours=10), 0)
