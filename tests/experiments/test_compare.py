"""A run's answers against a reference at the same points (``resolvent compare``): the paired
bootstrap's exact cases, a tiny real run against its own FQE oracle, and bad input."""
import numpy as np
import pytest
from click.testing import CliRunner

from resolvent.cli import main
from resolvent.evaluation import metrics
from resolvent.evaluation.metrics import mse_ratio, resamples
from resolvent.experiments import EvaluateConfig, run_evaluate
from resolvent.experiments.compare import compare, counts, table, write

TINY = dict(horizons=(3,), steps=40, log_every=20, checkpoint_every=40, seeds=1, m=16, n_initial=4,
            n_train_rewards=8, n_test_rewards=4, hidden=(16,), features=8, gt_tol=1e-3, n_points=6,
            methods=("attention", "fqe"), oracle_rewards="probe", eval_points=("reset", "dataset"))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("compare") / "run"
    run_evaluate(EvaluateConfig(**TINY), path, plot=False)
    return path


def test_the_ratio_is_exact_where_one_answers_errors_are_a_multiple_of_the_others():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(3, 50))                                    # (R, n)
    ref = truth + rng.normal(size=(3, 50))
    draws = resamples(50, 300, seed=1)
    ratio, low, high = mse_ratio(truth + 2.0 * (ref - truth), ref, truth, draws)   # every error doubled
    np.testing.assert_allclose([ratio, low, high], 4.0, rtol=1e-12)
    ratio, low, high = mse_ratio(ref, ref, truth, draws)                # the reference itself
    np.testing.assert_allclose([ratio, low, high], 1.0, rtol=1e-12)
    assert np.array_equal(draws, resamples(50, 300, seed=1)) and not np.array_equal(draws, resamples(50, 300, seed=2))


def test_the_draws_taken_in_chunks_give_the_same_interval(monkeypatch):
    rng = np.random.default_rng(5)
    truth = rng.normal(size=(4, 300))
    a, b = truth + rng.normal(size=(4, 300)), truth + 0.8 * rng.normal(size=(4, 300))
    draws = resamples(300, 500)
    whole = mse_ratio(a, b, truth, draws)
    monkeypatch.setattr(metrics, "BOOT_ELEMENTS", 3000)                 # 2 draws a chunk
    assert all(np.array_equal(x, y) for x, y in zip(whole, mse_ratio(a, b, truth, draws)))


def test_the_interval_holds_the_ratio_and_narrows_with_more_points():
    rng = np.random.default_rng(3)
    widths = []
    for n in (40, 4000):
        truth = rng.normal(size=n)
        a, b = truth + rng.normal(size=n), truth + 1.2 * rng.normal(size=n)
        ratio, low, high = mse_ratio(a, b, truth, resamples(n, 2000))
        assert low <= ratio <= high
        widths.append(high - low)
    assert widths[1] < widths[0] / 4                                    # ~ 1 / sqrt(n)


def test_a_run_against_its_own_oracle(run, tmp_path):
    c = compare(run)
    assert {r.method for r in c.rows} == {"attention"} and set(c.points) == {"reset", "dataset"}
    assert c.default == "attention" and c.trusted is None           # no trust report, no auto
    assert all(r.low <= r.ratio <= r.high and r.mse > 0 and r.ref_mse > 0 for r in c.rows)
    assert all(np.isclose(r.ratio, r.mse / r.ref_mse) for r in c.rows)
    assert compare(run).rows == c.rows                                  # the same seed, the same intervals
    inside, sure, sure_not = counts(c.rows, c.within)
    assert sure <= inside and sure + sure_not <= len(c.rows)
    text = table(c)
    rows = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")]
    assert rows.count("reference MSE") == 2 and rows.count("**attention**") == 2   # the default answer in bold
    written = write(c, tmp_path)
    assert written["compare.png"].stat().st_size > 5_000
    result = CliRunner().invoke(main, ["compare", str(run), "--out", str(tmp_path / "cli"), "--reps", "300"])
    assert result.exit_code == 0, result.output
    assert "attention" in result.output and (tmp_path / "cli" / "compare.md").is_file()


def test_bad_input_is_named(run, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no predictions.npz"):
        compare(empty)
    with pytest.raises(ValueError, match="no answer sf.*it has: attention, fqe"):
        compare(run, methods=("sf",))
    with pytest.raises(ValueError, match="no 'sf' answer on the probe rewards.*--oracle-rewards probe"):
        compare(run, against="sf")
    with pytest.raises(ValueError, match="no 'fqe' answer on the test rewards.*--oracle-rewards test"):
        compare(run, rewards="test")                                    # its oracle was trained on the probes
    with pytest.raises(ValueError, match="no answers on the 'heldout' rewards"):
        compare(run, rewards="heldout")
    other = tmp_path / "other"
    other.mkdir()
    with np.load(run / "predictions.npz") as z:
        arrays = {k: z[k] + (1.0 if k.endswith("truth") else 0.0) for k in z.files}   # other points' truth
    np.savez(other / "predictions.npz", **arrays)
    with pytest.raises(ValueError, match="different .* points"):
        compare(run, other)
    with np.load(run / "predictions.npz") as z:
        arrays = {k: z[k] for k in z.files}
    alone = tmp_path / "alone"                                          # the oracle's answers and nothing else
    alone.mkdir()
    np.savez(alone / "predictions.npz", **{k: v for k, v in arrays.items() if k.startswith("fqe|")})
    with pytest.raises(ValueError, match="no answer but the reference"):
        compare(alone)
    bare = tmp_path / "bare"                                            # answers without results.json
    bare.mkdir()
    np.savez(bare / "predictions.npz", **arrays)
    answers = compare(bare, run)
    assert answers.default == "attention" and answers.trusted is None and answers.rows[0].reward == "probe 0"
    result = CliRunner().invoke(main, ["compare", str(run), "--methods", "sf"])
    assert result.exit_code == 2 and "error: " in result.output and "no answer sf" in result.output
