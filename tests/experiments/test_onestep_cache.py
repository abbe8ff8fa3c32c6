"""The one-step model of an experiment is fitted once: a second call with the same data, config
and seed loads the saved model (identical), anything the fit reads makes another, and a damaged
file is fitted again, not trusted."""
import dataclasses
import warnings

import jax
import numpy as np
import pytest

from resolvent.algorithms import onestep
from resolvent.experiments import policy_refs
from resolvent.experiments.policy_refs import fit_data_model, fit_tag

CONFIG = onestep.OneStepConfig(hidden=(8,), steps=30, ensemble=2, keep=1)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("RESOLVENT_HOME", str(tmp_path))
    return tmp_path / "onestep"


def data(seed=0, n=200):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n, 3)).astype(np.float32)
    action = rng.uniform(-1, 1, (n, 1)).astype(np.float32)
    feats = {"obs": obs, "action": action, "next_obs": obs + 0.1 * action,
             "reward": obs[:, 0] - action[:, 0] ** 2, "terminated": np.zeros(n, np.float32)}
    x = np.concatenate([obs, action], -1)
    return feats, x.mean(0), x.std(0)


def leaves(model):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(model.params)]


def test_the_second_fit_loads_the_first_and_is_identical(home, monkeypatch):
    feats, mean, std = data()
    first = fit_data_model(CONFIG, 3, feats, mean, std)
    assert len(list(home.glob("*.npz"))) == 1

    def no_fit(*a, **k):
        raise AssertionError("fitted again")
    monkeypatch.setattr(onestep, "fit", no_fit)
    second = fit_data_model(CONFIG, 3, feats, mean, std)
    for a, b in zip(leaves(first), leaves(second), strict=True):
        np.testing.assert_array_equal(a, b)
    for name in ("x_mean", "x_std", "y_mean", "y_std", "low", "high", "scalar_low", "scalar_high"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))
    assert (first.keys, first.hidden, first.keep) == (second.keys, second.hidden, second.keep)
    pred = [onestep.predict(m, feats["obs"][:5], feats["action"][:5])["reward"] for m in (first, second)]
    np.testing.assert_array_equal(*pred)


def test_anything_the_fit_reads_makes_another_model():
    feats, mean, std = data()
    base = fit_tag(CONFIG, 0, feats, mean, std)
    other_data = {**feats, "reward": feats["reward"] + 1e-3}
    longer = onestep.OneStepConfig(hidden=(8,), steps=31, ensemble=2, keep=1)
    tags = [fit_tag(CONFIG, 1, feats, mean, std), fit_tag(longer, 0, feats, mean, std),
            fit_tag(CONFIG, 0, other_data, mean, std), fit_tag(CONFIG, 0, feats, mean, std * 2),
            fit_tag(CONFIG, 0, {**feats, "height": feats["reward"]}, mean, std)]
    assert base not in tags and len(set(tags)) == len(tags)
    assert fit_tag(CONFIG, 0, {k: v.copy() for k, v in feats.items()}, mean.copy(), std.copy()) == base
    assert fit_tag(dataclasses.replace(CONFIG, cycle=0.0), 0, feats, mean, std) == base   # the rollouts', not the fit's
    assert fit_tag(dataclasses.replace(CONFIG, close=False), 0, feats, mean, std) == base


def test_the_cached_model_rolls_out_with_the_asked_cycle(home, monkeypatch):
    feats, mean, std = data()
    first = fit_data_model(CONFIG, 0, feats, mean, std)
    monkeypatch.setattr(onestep, "fit", lambda *a, **k: (_ for _ in ()).throw(AssertionError("fitted again")))
    off = fit_data_model(dataclasses.replace(CONFIG, cycle=0.0, close=False), 0, feats, mean, std)
    assert (first.cycle, off.cycle, first.close, off.close) == (CONFIG.cycle, 0.0, True, False)
    for a, b in zip(leaves(first), leaves(off), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_damaged_file_is_fitted_again(home, monkeypatch):
    feats, mean, std = data()
    first = fit_data_model(CONFIG, 0, feats, mean, std)
    (path,) = home.glob("*.npz")
    path.write_bytes(b"not a zip")
    calls = []
    fit = onestep.fit
    monkeypatch.setattr(onestep, "fit", lambda *a, **k: calls.append(1) or fit(*a, **k))
    again = fit_data_model(CONFIG, 0, feats, mean, std)
    assert calls == [1]
    for a, b in zip(leaves(first), leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)
    assert policy_refs.cached_model(path) is not None   # written again, whole


def test_a_termination_rule_fits_split_attaches_the_rule_and_names_disagreement(home):
    feats, mean, std = data()
    feats["terminated"] = (feats["next_obs"][:, 0] > 1.0).astype(np.float32)
    rule = lambda f: (f["next_obs"][:, 0] > 1.0).astype(np.float32)  # noqa: E731
    model = fit_data_model(CONFIG, 0, feats, mean, std, rule)
    assert model.split and model.terminal is rule
    assert fit_tag(CONFIG, 0, feats, mean, std, True) != fit_tag(CONFIG, 0, feats, mean, std)
    loose = lambda f: (f["next_obs"][:, 0] > 0.9).astype(np.float32)  # noqa: E731
    wrong = int(((feats["next_obs"][:, 0] > 0.9) & (feats["next_obs"][:, 0] <= 1.0)).sum())
    with pytest.warns(UserWarning, match=f"disagrees with the dataset's `terminated` flag on {wrong} of 200"):
        again = fit_data_model(CONFIG, 0, feats, mean, std, loose)
    assert again.terminal is loose and len(list(home.glob("*.npz"))) == 1   # the same fit, loaded
    with pytest.raises(ValueError, match="no transition of the dataset terminates"):
        fit_data_model(CONFIG, 0, {**feats, "terminated": 0 * feats["terminated"]}, mean, std, rule)


def test_a_noise_past_the_datas_reach_warns_and_the_model_is_still_given(home):
    """fit_data_model warns where its noisy rollout, uncapped, would move a dimension past
    NOISE_REACH of its spread each step (onestep.noise_reach), and not without noise or under the
    default cap; the model carries the config's rollout settings and is the same fit either way."""
    feats, mean, std = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = fit_data_model(CONFIG, 0, feats, mean, std)
        reach = float(np.max(quiet.residual / std[:3]))              # the fit's own sigma_d / std_d, its largest
        far = dataclasses.replace(CONFIG, noise=2 * onestep.NOISE_REACH / reach)
        capped = fit_data_model(far, 0, feats, mean, std)             # the default cap: within
    with pytest.warns(UserWarning, match="the copies leave the data"):
        loud = fit_data_model(dataclasses.replace(far, noise_cap=0.0), 0, feats, mean, std)
    assert capped.noise_cap == onestep.NOISE_REACH and loud.noise > 0 and loud.noise_cap == 0.0
    assert len(list(home.glob("*.npz"))) == 1
    for a, b in zip(leaves(quiet), leaves(loud), strict=True):
        np.testing.assert_array_equal(a, b)
