"""Any dataset: a Minari dataset of a non-paper environment, a callable policy, any rewards."""
import json
import sys
from pathlib import Path

import gymnasium as gym
import jax.numpy as jnp
import minari
import numpy as np
import pytest
from click.testing import CliRunner

import resolvent
from resolvent.algorithms.bank import BankConfig
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.experiments.evaluate import AUTO_CANDIDATES, EvaluateConfig
from resolvent.cli import main
from resolvent.data.user import load_dataset, record_dataset
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.trust import choose_method, with_bank
from resolvent.experiments.sources import config_source
from resolvent.model import horizon_rank, split_bank, split_method

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from examples import reacher  # noqa: E402

TINY = dict(onestep=OneStepConfig(hidden=(16,), steps=20), horizons=(2,),
            bank=BankConfig(points=-1, horizon=5, steps=2),   # the default's, on a short rollout
            steps=40, seeds=1, log_every=20, checkpoint_every=20, m=16, n_initial=8, gt_tol=1e-2,
            sf_fit_points=256)


@pytest.fixture(scope="module")
def dataset():
    return reacher.build(size=1500, rebuild=True)


def test_recording_is_reproducible():
    """record_dataset seeds every episode's reset from the seed (Minari would draw a fresh random
    one): recording again gives the same dataset; another seed another."""
    def record(seed):
        env = reacher.InfoAtReset(gym.make(reacher.ENV_ID))
        ds = record_dataset(env, reacher.policy, "tests/reacher-repro-v0", 300, seed, record_infos=True, rebuild=True)
        return load_dataset(ds)[1]

    first, again, other = record(0), record(0), record(1)
    minari.delete_dataset("tests/reacher-repro-v0")
    for k in ("obs", "action", "reward"):
        np.testing.assert_array_equal(first[k], again[k])
    assert not np.allclose(first["obs"], other["obs"])


def position(f):
    return f["obs"][:, 8]                   # fingertip x - target x


def dataset_obs(dataset):
    return load_dataset(dataset)[1]["obs"]


def test_dataset_schema(dataset):
    spec, data = load_dataset(dataset)
    assert spec.env_id == "Reacher-v5"
    assert spec.extras == ("terminated", "reward", "reward_ctrl", "reward_dist")     # infos flattened
    assert data["obs"].shape == (1500, 10) and data["action"].shape == (1500, 2)
    np.testing.assert_allclose(data["reward"], data["reward_dist"] + data["reward_ctrl"], atol=1e-5)
    np.testing.assert_array_equal(data["next_obs"][:-1][~(data["terminated"] | data["truncated"])[:-1]],
                                  data["obs"][1:][~(data["terminated"] | data["truncated"])[:-1]])
    assert spec.feature_keys == ("obs", "action", "next_obs", "terminated", "reward", "reward_ctrl", "reward_dist")


def test_fit_load_and_answer_any_reward(dataset, tmp_path):
    model = resolvent.fit(dataset, reacher.policy, out=tmp_path / "run", method=("attention", "fqe"),
                          rewards={"position": position}, probes={"distance": lambda f: f["reward_dist"]},
                          plot=False, **TINY)
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert res["ground_truth"] and res["train_rewards"] == ["reward", "position"]
    att = res["methods"]["attention"]
    assert {"train_mse", "train_r2", "probe_mse", "probe_r2", "loss"} <= set(att)
    assert set(res["methods"]["fqe"]) >= {"train_mse", "train_r2"}          # the oracle answers the trained ones
    obs, act = np.asarray(dataset_obs(dataset)[:2]), np.asarray([[0.5, 0.1], [-1.0, 0.3]], np.float32)
    effort = lambda f: -jnp.sum(f["action"] ** 2, axis=-1)                     # noqa: E731 - never trained on
    q = model.q_values(effort, obs, act)
    # fit returns the run's answer, the one load gives (its most accurate against the ground truth)
    chosen = resolvent.default_method(tmp_path / "run")[0]
    assert chosen in res["methods"] and chosen.startswith("attention") and model.horizon == split_method(chosen)[1]
    again = resolvent.load(tmp_path / "run", method=chosen).q_values(effort, obs, act)
    assert q.shape == (2,) and np.all(np.isfinite(q))
    np.testing.assert_allclose(q, again, rtol=1e-6)
    with pytest.raises(ValueError, match=r"asked for 'x_velocity'.*available: \['action', 'next_obs', 'obs', "
                                         r"'reward', 'reward_ctrl', 'reward_dist', 'terminated'\]"):
        model.q_values(lambda f: f["x_velocity"], obs, act)


def test_cli_data_policy_probes_and_resume(dataset, tmp_path):
    out = tmp_path / "cli"
    args = ["evaluate", "--data", reacher.DATASET_ID, "--policy", "examples/reacher.py:policy",
            "--probes", "examples/reacher_probes.py", "--methods", "attention", "--steps", "40",
            "--log-every", "20", "--checkpoint-every", "20", "--seeds", "1", "--m", "16", "--out", str(out)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "data / examples/reacher-jt-v0" in res.output and "probe rewards: distance, near-target" in res.output
    again = CliRunner().invoke(main, ["evaluate", "--out", str(out), "--resume"])
    assert again.exit_code == 0, again.output
    steps = [r["step"] for r in RunDir(out).read_metrics()]
    assert steps == sorted(steps) and steps.count(40) == 1


def test_no_environment_reports_bellman_residuals(dataset, tmp_path):
    res = CliRunner().invoke(main, ["evaluate", "--data", reacher.DATASET_ID, "--env", "none", "--policy",
                                    "examples.reacher:policy", "--methods", "attention,vanilla", "--steps", "20",
                                    "--log-every", "20", "--seeds", "1", "--m", "16", "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "no ground truth" in res.output and "residual" in res.output
    rows = RunDir(tmp_path / "r").read_metrics()
    assert rows[-1]["loss"] > 0 and "train_mse" not in rows[-1]
    assert (tmp_path / "r" / "mse.png").is_file()                            # the residual along training
    # the trust report: every method against per-reward FQE on held-out rewards at dataset states
    assert "trust report" in res.output and "given:reward" in res.output
    saved = json.loads((tmp_path / "r" / "results.json").read_text())
    assert saved["heldout_rewards"][-1] == "given:reward" and len(saved["heldout_rewards"]) == 9
    for m in ("attention", "vanilla"):
        entry = saved["methods"][m]
        assert np.isfinite(entry["trust_r2"]).all() and np.all(np.asarray(entry["trust_rel_rmse"]) > 0)
        assert set(entry["trust_r2_each"]) == set(entry["trust_bellman_each"]) == set(saved["heldout_rewards"])
        assert np.all(np.asarray(entry["trust_bellman"]) > 0)     # a 20-step network is not consistent
    # the oracle's own Bellman residual on the same transitions, printed beside the methods'
    assert saved["trust_oracle"]["trust_bellman"] > 0 and "(FQE itself)" in res.output and "Bellman" in res.output
    assert np.isfinite(rows[-1]["trust_r2"]) and (tmp_path / "r" / "scatter.png").is_file()
    # no auto, no ground truth: auto's rule over the run's own answers is its default answer
    tie = EvaluateConfig().auto_tie
    kept = with_bank(saved["methods"], choose_method(saved["methods"], ("attention", "vanilla"), tie), tie)
    assert "auto" not in saved and saved["trusted"] == kept
    assert resolvent.default_method(tmp_path / "r") == (kept["chosen"], "the answer auto's rule keeps among the "
                                                                       "run's, by its trust report")
    assert f"(answered by {kept['chosen']}, the answer auto's rule keeps" in res.output
    assert resolvent.load(tmp_path / "r").method == kept["chosen"]


def test_auto_keeps_the_best_held_out_agreement_and_load_loads_it(dataset, tmp_path):
    horizons = (2, 5)                                    # 5: the bank's K, whose G_K the bank answers stand in for
    model = resolvent.fit(dataset, reacher.policy, out=tmp_path / "a", method="auto", env="none",
                          **{**TINY, "steps": 20, "log_every": 20, "horizons": horizons})
    res = json.loads((tmp_path / "a" / "results.json").read_text())
    # every operator's model-based expansions are candidates too; the bank's answers (made by
    # default under auto) may take the pick's place
    expansions = {f"{m}+k{k}" for m in AUTO_CANDIDATES for k in (*horizons, "auto")}
    banked = {f"{m}+b5+k{k}" for m in ("favor", "fb") for k in horizons}
    means = [m for m in res["methods"] if "~" in m]          # auto's mean of answers, where it averaged
    answers = {m: r for m, r in res["methods"].items() if m not in means}
    assert set(answers) == set(AUTO_CANDIDATES) | expansions | banked
    mean = {m: np.mean([np.mean(v) for v in r["trust_rel_rmse_each"].values()]) for m, r in answers.items()}
    bell = {m: np.mean([np.mean(v) for v in r["trust_bellman_each"].values()]) for m, r in answers.items()}
    chosen, tie = res["auto"]["chosen"], EvaluateConfig().auto_tie
    tied = [m for sc in (mean, bell) for m, v in sc.items() if m not in banked and v <= (1 + tie) * min(
        v for c, v in sc.items() if c not in banked)]
    # of the candidates near the best on either signal, the longest fixed expansion (kauto below k = 0)
    # or a kauto closer to FQE than it, or its operator's bank answer where that one's residual is no
    # larger and its agreement in the band
    longest = max(tied, key=lambda m: (horizon_rank(split_method(m)[1]), -mean[m]))
    closer = [m for m in tied if split_method(m)[1] == "auto" and mean[m] < mean[longest]]   # kauto agrees better
    pick = min(closer, key=mean.get) if closer else longest
    band = (1 + tie) * min(v for m, v in mean.items() if m not in banked)
    # and its departure from G_5 no larger than G_5's spread among the one-step members (each >= 0)
    spread = {m: np.mean([np.mean(v) for v in r["trust_spread_each"].values()])
              for m, r in res["methods"].items() if "trust_spread_each" in r}
    gap = {m: np.mean([np.mean(v) for v in res["methods"][m]["trust_gap_each"].values()]) for m in banked}
    assert set(spread) == {"favor+k5", "fb+k5"} and min(spread.values()) >= 0 and min(gap.values()) >= 0
    mine = [m for m in banked if m.startswith(split_method(pick)[0] + "+b") and bell[m] <= bell[pick]
            and mean[m] <= band and gap[m] <= spread[split_bank(split_method(m)[0])[0] + "+k5"]]
    single = min(mine, key=lambda m: bell[m]) if mine else pick
    assert single in res["auto"]["why"] and res["auto"].get("replaced", single) == pick
    # an expansion (not the bank's) averaged with the same expansion of every operator within the band of its agreement
    base, k = split_method(single)
    partners = [m for m in mean if m not in banked and m != single and split_method(m)[1] == k
                and split_method(m)[0] != base and mean[m] <= (1 + tie) * mean[single]] if single == pick and k else []
    assert chosen == "~".join((single, *partners)) and means == ([chosen] if partners else [])
    if partners:                 # scored as an answer, loaded as the mean of its members sharing one rollout
        assert res["methods"][chosen]["members"] == [single, *partners] and res["auto"]["alone"] == single
        assert model.method == chosen and model.horizon == k
        assert [(m.method, m.horizon) for m in model.members] == [split_method(m) for m in (single, *partners)]
        assert all(m.rollouts is model.members[0].rollouts for m in model.members)
    else:
        assert (model.method, model.horizon, model.bank is not None) == (split_bank(base)[0], k, "+b" in chosen)
    again = resolvent.load(tmp_path / "a")                                        # no method: the pick
    assert (again.method, again.horizon) == (model.method, model.horizon)
    assert resolvent.load(tmp_path / "a", method="fb").method == "fb"


@pytest.mark.parametrize("policy, message", [
    (lambda o: np.zeros((len(o), 3), np.float32), r"actions of shape \(64, 3\).*\(n, 2\)"),
    (lambda o: np.full((len(o), 2), np.nan, np.float32), "non-finite actions"),
    (lambda o: o @ np.ones((3, 2), np.float32), r"failed on the dataset's observations of shape \(64, 10\)"),
    ("examples/reacher.py:no_such_policy", "has no attribute 'no_such_policy'"),
])
def test_bad_policies(dataset, tmp_path, policy, message):
    with pytest.raises(ValueError, match=message):
        resolvent.fit(dataset, policy, out=tmp_path / "bad", plot=False, **TINY)
    assert not (tmp_path / "bad" / "config.json").exists()


def test_bad_rewards_and_datasets(dataset, tmp_path):
    with pytest.raises(ValueError, match=r"training reward 'speed' asked for 'x_velocity'"):
        resolvent.fit(dataset, reacher.policy, out=tmp_path / "a", rewards={"speed": lambda f: f["x_velocity"]},
                      plot=False, **TINY)
    with pytest.raises(ValueError, match="cannot load the Minari dataset 'nobody/nothing-v0'"):
        resolvent.fit("nobody/nothing-v0", reacher.policy, out=tmp_path / "b", plot=False, **TINY)
    env = gym.make(reacher.ENV_ID)
    from minari.data_collector import EpisodeBuffer
    obs = np.zeros((11, 10), np.float32)
    obs[4, 1] = np.nan
    buf = EpisodeBuffer(observations=obs, actions=np.zeros((10, 2), np.float32), rewards=np.zeros(10),
                        terminations=np.zeros(10, bool), truncations=np.r_[np.zeros(9, bool), True])
    nan = minari.create_dataset_from_buffers("tests/nan-v0", [buf], env=env, algorithm_name="nan",
                                             author="t", author_email="t@t.t", code_permalink="https://x")
    with pytest.raises(ValueError, match=r"'obs' has a non-finite value .* transition 4"):
        resolvent.fit(nan, reacher.policy, out=tmp_path / "c", plot=False, **TINY)
    with pytest.raises(ValueError, match="cannot build the environment 'NoSuchEnv-v9'"):
        resolvent.fit(dataset, reacher.policy, out=tmp_path / "d", env="NoSuchEnv-v9", plot=False, **TINY)


def test_calibrate_a_dataset_run_from_the_command_line(dataset, tmp_path):
    """A dataset of one's own whose environment can be restored (Reacher): ``resolvent calibrate
    RUN`` answers the run's own reward and probes at its dataset points; the true Q at the points
    rolled out is the run's own Monte-Carlo truth there (the same simulator, restore and policy)."""
    run = tmp_path / "r"
    args = ["evaluate", "--data", reacher.DATASET_ID, "--policy", "examples/reacher.py:policy", "--probes",
            "examples/reacher_probes.py", "--methods", "fb", "--horizons", "2", "--steps", "20", "--log-every", "20",
            "--seeds", "1", "--m", "16", "--n-points", "8", "--eval-points", "dataset", "--gt-tol", "1e-2",
            "--onestep.hidden", "16", "--onestep.steps", "20", "--out", str(run)]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    out = tmp_path / "c.npz"
    res = CliRunner().invoke(main, ["calibrate", str(run), "-m", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "pi rolled out from 4 of them" in res.output and "distance" in res.output
    src = config_source(EvaluateConfig.from_dict(RunDir(run).read_config()))
    rewards = dict(src.rewards["train"] + src.rewards["probe"])
    gt = src.points["dataset"]
    with np.load(out) as z:
        assert z["q"].shape == (len(rewards), 8) and set(z["chosen"]) <= set(z["candidates"])
        want = np.stack([np.asarray(gt.q(r))[z["labelled"]] for r in rewards.values()])   # (R, m)
        np.testing.assert_allclose(z["truth"], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(z["q"][:, z["labelled"]], z["truth"])
