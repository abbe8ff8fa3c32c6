"""The accuracy metrics on small arrays with known answers."""
import numpy as np
import pytest
from scipy import stats

from resolvent.evaluation.metrics import bellman_residual, dope, mse, r2, ranks, rel_rmse, score_points, spearman


def test_point_metrics_known_answers():
    truth = np.array([1.0, 2.0, 3.0])
    assert mse([1.0, 2.0, 5.0], truth) == pytest.approx(4 / 3)
    assert r2(truth, truth) == pytest.approx(1.0)
    assert r2([2.0, 2.0, 2.0], truth) == pytest.approx(0.0)                 # the truth's mean: a constant
    assert r2([1.0, 2.0, 5.0], truth) == pytest.approx(1 - (4 / 3) / (2 / 3))
    assert rel_rmse([1.1, -1.1], [1.0, -1.0]) == pytest.approx(0.1)          # 10% of the truth's size
    assert rel_rmse([101.0, 99.0], [100.0, 100.0]) == pytest.approx(0.01)    # R^2 would say nothing here


def test_ranks_and_spearman():
    np.testing.assert_array_equal(ranks([3.0, 1.0, 2.0]), [2, 0, 1])
    np.testing.assert_array_equal(ranks([1.0, 1.0, 2.0]), [0.5, 0.5, 2])   # ties share their average
    assert spearman([1.0, 2.0, 3.0], [10.0, 100.0, 1000.0]) == pytest.approx(1.0)   # any monotone map
    assert spearman([3.0, 2.0, 1.0], [1.0, 2.0, 3.0]) == pytest.approx(-1.0)
    assert spearman([1.0, 3.0, 2.0], [1.0, 2.0, 3.0]) == pytest.approx(0.5)          # 1 - 6 * 2 / (3 * 8)
    assert spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == 0.0                         # a constant ranks nothing
    noise = 1 + np.array([3e-16, -2e-16, 1e-16, 0.0])                 # one value, summed in other orders
    np.testing.assert_array_equal(ranks(100.0 * noise), [1.5, 1.5, 1.5, 1.5])
    np.testing.assert_array_equal(ranks([100.0, 100.0 * (1 + 1e-6), 0.0]), [1, 2, 0])   # apart: not tied
    assert spearman(np.r_[100.0 * noise, 50.0], [100.0] * 4 + [50.0]) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 5, (4, 20)).astype(float), rng.normal(size=(4, 20))
    want = [stats.spearmanr(x, y).statistic for x, y in zip(a, b)]
    np.testing.assert_allclose(spearman(a, b), want, atol=1e-12)


def test_dope_trio_known_answers():
    d = dope([0.0, 2.0, 1.0], [0.0, 1.0, 2.0])
    assert d["value_error"] == pytest.approx(1 / 3)     # normalised |[0, 1, .5] - [0, .5, 1]|
    assert d["value_rank"] == pytest.approx(0.5)
    assert d["regret"] == pytest.approx(0.5)            # picks the reward worth 1 where 2 was best, range 2
    exact = dope([5.0, 6.0, 7.0], [5.0, 6.0, 7.0])
    assert exact["value_error"] == 0 and exact["value_rank"] == pytest.approx(1) and exact["regret"] == 0
    assert dope([0.0, 0.0, 10.0], [0.0, 1.0, 2.0])["value_error"] == pytest.approx((0 + 0.5 + 1) / 3)  # clipped at 2


def test_score_points_shapes_and_seeds():
    truth = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 1.0]])                  # (R=2, n=3)
    pred = np.stack([truth, truth + 1.0])                                   # (S=2, R, n)
    out = score_points(pred, truth)
    np.testing.assert_allclose(out["mse"], [0.0, 1.0])
    np.testing.assert_allclose(out["spearman"], [1.0, 1.0])                # a shift keeps the order
    assert out["r2_each"].shape == out["rel_rmse_each"].shape == (2, 2) and out["r2"][0] == pytest.approx(1.0)
    np.testing.assert_allclose(out["regret"], [0.0, 0.0])
    assert "regret" not in score_points(pred[:, :1], truth[:1])            # one reward: no trio


def test_bellman_residual_is_zero_at_the_true_q_and_sees_an_offset_through_one_minus_gamma():
    """A deterministic 3-state cycle 0 -> 1 -> 2 -> 0 (one action), reward [1, 0, 2]: the true Q
    satisfies the Bellman equation exactly; on terminal transitions Q = r does."""
    gamma, r = 0.9, np.array([1.0, 0.0, 2.0])
    p = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], float)
    q = np.linalg.solve(np.eye(3) - gamma * p, r)                          # (3,) Q of the cycle
    nxt, done = np.array([1, 2, 0]), np.zeros(3)
    assert bellman_residual(q, r, q[nxt], done, gamma) == pytest.approx(0.0, abs=1e-12)
    # an offset c everywhere leaves (1 - gamma) c at every transition
    c = 5.0
    expect = (1 - gamma) * c / np.sqrt(np.mean(r ** 2))
    assert bellman_residual(q + c, r, q[nxt] + c, done, gamma) == pytest.approx(expect)
    # a terminal transition ignores the next answer: Q = r there
    assert bellman_residual(r, r, np.full(3, 1e6), np.ones(3), gamma) == 0.0
    # a sparse reward, 0 at every one of these transitions, is measured in its size elsewhere
    zero = np.zeros(3)
    assert bellman_residual(zero + 1.0, zero, zero, done, gamma, scale=2.0) == pytest.approx(0.5)
    # leading axes (seeds, rewards) are kept
    assert bellman_residual(np.stack([q, q + c]), r, np.stack([q[nxt], q[nxt] + c]), done, gamma).shape == (2,)
