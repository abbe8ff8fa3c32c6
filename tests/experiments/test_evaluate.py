import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from minari.storage.datasets_root_dir import get_dataset_path

from resolvent.algorithms.onestep import OneStepConfig
from resolvent.data import dataset_id, load_transitions
from resolvent.experiments import EvaluateConfig, RunDir, open_run, run_evaluate
from resolvent.experiments.evaluate import set_answers
from resolvent.experiments.problem import prepare
from resolvent.experiments.trust import choose_method, with_bank, with_partners
from resolvent.families import get_family
from resolvent.model import CheckpointError, split_method
from resolvent.rewards import PriorConfig

TINY = dict(horizons=(3,), steps=40, log_every=10, checkpoint_every=20, seeds=2, m=16, n_initial=4,
            n_train_rewards=8, n_test_rewards=4, hidden=(16,), features=8, gt_tol=1e-3, n_points=6,
            methods=("attention", "vanilla"))


def metrics(path):
    return [(r["method"], r["seed"], r["step"], r["train_mse"], r["test_mse"])
            for r in RunDir(path).read_metrics()]


def test_run_writes_everything(tmp_path):
    res = run_evaluate(EvaluateConfig(**TINY), tmp_path)
    assert set(res["methods"]) == {"attention", "vanilla"}
    for m in res["methods"].values():
        assert len(m["train_mse"]) == len(m["test_mse"]) == 2 and m["steps"] == 40
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["family"] == "pendulum-angle" and saved["dataset"] == "expert"
    assert json.loads((tmp_path / "config.json").read_text())["steps"] == 40
    assert (tmp_path / "mse.png").stat().st_size > 10_000
    rows = RunDir(tmp_path).read_metrics()
    assert {r["step"] for r in rows} == {0, 10, 20, 30, 40}
    for key in ("train_mse", "test_mse", "probe_mse", "train_r2", "test_r2", "probe_r2"):
        assert all(np.isfinite(r[key]) for r in rows), key
        for m in res["methods"].values():
            assert len(m[key]) == 2
    assert set(res["methods"]["attention"]["probe_r2_each"]) == set(res["probes"])
    assert len(res["probes"]) >= 6 and res["reward_prior"] == "mix"
    with pytest.raises(FileExistsError, match="--resume"):
        run_evaluate(EvaluateConfig(**TINY), tmp_path)
    _, p = open_run(tmp_path)       # no policy-encoded operator: nothing to expand with, said so
    with pytest.raises(ValueError, match="no one-step model"):
        p.expansion_model(tmp_path / "models", "attention")


def test_same_seed_same_numbers_other_seed_other_numbers(tmp_path):
    run_evaluate(EvaluateConfig(**TINY), tmp_path / "a", plot=False)
    run_evaluate(EvaluateConfig(**TINY), tmp_path / "b", plot=False)
    run_evaluate(EvaluateConfig(**{**TINY, "seed": 1}), tmp_path / "c", plot=False)
    assert metrics(tmp_path / "a") == metrics(tmp_path / "b")
    assert metrics(tmp_path / "a") != metrics(tmp_path / "c")
    # the two seeds of one run differ from each other
    rows = [r for r in metrics(tmp_path / "a") if r[2] == 40 and r[0] == "attention"]
    assert rows[0][3] != rows[1][3]


def test_killed_run_resumes_to_the_same_result(tmp_path, monkeypatch):
    kill_at_third_checkpoint_then_resume(EvaluateConfig(**TINY), tmp_path, monkeypatch)  # vanilla killed halfway
    assert sorted(metrics(tmp_path / "killed")) == sorted(metrics(tmp_path / "full"))


def kill_at_third_checkpoint_then_resume(cfg, tmp_path, monkeypatch):
    """Run ``cfg`` whole into tmp_path/full; into tmp_path/killed, kill it right after its third
    checkpoint (the first method finished, the second halfway), then resume it."""
    run_evaluate(cfg, tmp_path / "full", plot=False)
    calls = {"n": 0}
    original = RunDir.save_checkpoint

    def dying(self, method, tree):
        original(self, method, tree)
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "save_checkpoint", dying)
    with pytest.raises(KeyboardInterrupt):
        run_evaluate(cfg, tmp_path / "killed", plot=False)
    monkeypatch.setattr(RunDir, "save_checkpoint", original)
    run_evaluate(cfg, tmp_path / "killed", resume=True, plot=False)


def test_killed_policy_encoded_run_resumes_to_the_same_result(tmp_path, monkeypatch):
    """favor and fb (one-step model, fresh reference states per step) killed mid-run resume
    to exactly the uninterrupted run's metrics."""
    cfg = EvaluateConfig(**{**TINY, "methods": ("favor", "fb"), "n_refs": 16, "ref_pool": 200,
                            "random_features": 16, "onestep": OneStepConfig(hidden=(16,), steps=20)})
    kill_at_third_checkpoint_then_resume(cfg, tmp_path, monkeypatch)   # favor finished, fb killed halfway
    assert sorted(metrics(tmp_path / "killed")) == sorted(metrics(tmp_path / "full"))
    with np.load(tmp_path / "full" / "predictions.npz") as z:   # every answer beside its truth, expansions too
        for m in ("favor", "fb", "favor+k3", "fb+k3"):
            assert z[f"{m}|test|reset|pred"].shape == z[f"{m}|test|reset|truth"].shape == (4, 4)   # n_initial
        saved = z["fb+k3|test|reset|pred"]
    # a finished run read again: its config, its problem, an operator set to expand as the run did
    again, p = open_run(tmp_path / "full")
    assert again == cfg
    model = p.expansion_model(tmp_path / "full" / "models", "fb")
    reset = set_answers(model, p, *p.raw_points(), horizon=3)["test"][..., p.slices["reset"]]   # (S, R, n)
    np.testing.assert_allclose(reset.mean(0), saved, rtol=1e-5, atol=1e-5)


def test_corrupt_checkpoint_is_reported_and_kept(tmp_path, monkeypatch):
    run = RunDir(tmp_path)
    original = RunDir.save_checkpoint

    def once(self, method, tree):
        original(self, method, tree)
        raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "save_checkpoint", once)
    with pytest.raises(KeyboardInterrupt):
        run_evaluate(EvaluateConfig(**TINY), tmp_path, plot=False)
    monkeypatch.setattr(RunDir, "save_checkpoint", original)
    ckpt = run.checkpoint_path("attention")
    ckpt.write_bytes(b"not a checkpoint")
    before = run.metrics_path.read_text()
    with pytest.raises(CheckpointError, match="attention.ckpt is corrupt"):
        run_evaluate(EvaluateConfig(**TINY), tmp_path, resume=True, plot=False)
    assert ckpt.read_bytes() == b"not a checkpoint" and run.metrics_path.read_text() == before


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="unknown method 'transformer'"):
        EvaluateConfig(methods=("transformer",))
    with pytest.raises(ValueError, match="resolvent optimize"):
        EvaluateConfig(methods=("maxout",))
    with pytest.raises(ValueError, match="unknown dataset kind 'random'"):
        EvaluateConfig(dataset="random")
    with pytest.raises(ValueError, match="unknown reward family"):
        EvaluateConfig(family="walker")
    with pytest.raises(ValueError, match=r"unknown config keys \['lr_decay'\]"):
        EvaluateConfig.from_dict({"lr_decay": 1})
    with pytest.raises(ValueError, match="steps must be >= 1"):
        EvaluateConfig(steps=0)
    with pytest.raises(ValueError, match="keep between 0 .all. and ensemble, got ensemble=2, keep=3"):
        EvaluateConfig(onestep=OneStepConfig(ensemble=2, keep=3))
    with pytest.raises(ValueError, match="cycle is a distance in the data's state scale, >= 0 .0: off., got -0.1"):
        EvaluateConfig(onestep=OneStepConfig(cycle=-0.1))


def test_nan_dataset_is_rejected_before_anything_is_written(tmp_path, monkeypatch):
    """A stored dataset with a NaN observation: the run's own loader refuses it, naming the field
    and the transition, before the run writes anything."""
    family = get_family("pendulum-angle")
    load_transitions(family, "expert")                    # the test session's dataset, built once
    did = dataset_id(family, "expert")
    root = tmp_path / "minari"                            # a poisoned copy; the original stays clean
    shutil.copytree(get_dataset_path(did), root / did)
    with h5py.File(root / did / "data" / "main_data.hdf5", "r+") as f:
        f["episode_0/observations"][7, 0] = np.nan
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    with pytest.raises(ValueError, match="'obs' has a non-finite value .* transition 7"):
        run_evaluate(EvaluateConfig(**TINY), tmp_path / "nan")
    assert not (tmp_path / "nan" / "config.json").exists()


def test_fqe_oracle_and_every_prior(tmp_path):
    """The FQE oracle reports test rewards only; every prior trains every operator."""
    res = run_evaluate(EvaluateConfig(**{**TINY, "methods": ("fqe", "sf", "linear")}), tmp_path / "o", plot=False)
    fqe = res["methods"]["fqe"]
    assert {"test_mse", "test_r2", "traj_test_r2", "data_test_rel_rmse", "loss", "steps", "seconds"} <= set(fqe)
    assert all("test_" in k for k in fqe if k not in ("loss", "steps", "seconds")) and len(fqe["test_mse"]) == 2
    rows = [r for r in RunDir(tmp_path / "o").read_metrics() if r["method"] == "fqe"]
    assert {r["step"] for r in rows} == {0, 10, 20, 30, 40} and "train_mse" not in rows[0]
    for kind in ("family", "generic"):
        cfg = EvaluateConfig.preset("default", **{**TINY, "methods": ("attention", "sf")})
        cfg = dataclasses.replace(cfg, fqe=dataclasses.replace(cfg.fqe, prior=PriorConfig(kind=kind, n_generic=4)))
        out = run_evaluate(cfg, tmp_path / kind, plot=False)
        assert all(np.isfinite(v).all() for m in out["methods"].values()
                   for k, v in m.items() if k.endswith(("mse", "r2")))


def test_fqe_oracle_on_the_probe_rewards(tmp_path):
    """oracle_rewards="probe": the oracle is trained on, and scored on, the probe rewards alone
    (here by DOPE's recipe, oracle="dope")."""
    res = run_evaluate(EvaluateConfig(**{**TINY, "methods": ("fqe",), "oracle_rewards": "probe", "oracle": "dope"}),
                       tmp_path, plot=False)
    assert json.loads((tmp_path / "config.json").read_text())["oracle"] == "dope"
    fqe = res["methods"]["fqe"]
    assert {"probe_mse", "traj_probe_r2", "data_probe_rel_rmse"} <= set(fqe)
    assert all("probe_" in k for k in fqe if k not in ("loss", "steps", "seconds"))
    assert list(fqe["probe_r2_each"]) == res["probes"] and np.isfinite(fqe["probe_mse"]).all()
    # results/accuracy/probe_vs_oracle.py: every probe's MSE of a run's methods over this oracle's
    run_evaluate(EvaluateConfig(**{**TINY, "methods": ("sf",)}), tmp_path / "sf", plot=False)
    script = Path(__file__).resolve().parents[2] / "results" / "accuracy" / "probe_vs_oracle.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "sf"), str(tmp_path)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "| sf | dataset |" in out.stdout and "| FQE oracle (its MSE) | reset |" in out.stdout
    with pytest.raises(ValueError, match="oracle_rewards must be one of"):
        EvaluateConfig(oracle_rewards="train")
    with pytest.raises(ValueError, match="oracle must be one of"):
        EvaluateConfig(oracle="d4rl")


def test_config_round_trip_and_presets():
    cfg = EvaluateConfig.preset("paper", steps=100, log_every=50, checkpoint_every=50)
    assert cfg.fqe.tau == 0.005 and cfg.prior.kind == "family"
    assert EvaluateConfig.from_dict(cfg.to_dict()) == cfg
    assert EvaluateConfig().prior.kind == "mix"
    # a run directory written before the reward prior: flat FQE keys, the family prior
    old = {k: v for k, v in EvaluateConfig().to_dict().items() if k != "fqe"}
    back = EvaluateConfig.from_dict({**old, "gamma": 0.9, "tau": 0.01})
    assert back.fqe.gamma == 0.9 and back.fqe.tau == 0.01 and back.prior.kind == "family"
    with pytest.raises(ValueError, match="unknown preset 'fast'"):
        EvaluateConfig.preset("fast")
    with pytest.raises(ValueError, match="methods listed twice"):
        EvaluateConfig(methods=("sf", "sf"))
    with pytest.raises(ValueError, match="must be a multiple of log_every"):
        EvaluateConfig(steps=250, log_every=100, checkpoint_every=100)


def test_half_policy_reference_points(tmp_path):
    """Every other reference point takes the target policy's action and has no next
    observation: rewards of (obs, action) are encoded there, others get a clear error."""
    import resolvent
    from resolvent.experiments.evaluate import reference_features
    from resolvent.policies import load_target_policy

    actor = load_target_policy("pendulum-angle")
    rng = np.random.default_rng(0)
    feats = {"obs": rng.normal(size=(10, 3)).astype(np.float32), "action": rng.normal(size=(10, 1)).astype(np.float32),
             "next_obs": rng.normal(size=(10, 3)).astype(np.float32)}
    xi = reference_features(feats, np.array([0, 2, 4, 6]), "half-policy", actor)
    np.testing.assert_array_equal(xi["action"][[0, 2]], feats["action"][[0, 4]])
    np.testing.assert_allclose(xi["action"][[1, 3]], np.asarray(actor(feats["obs"][[2, 6]])))
    assert np.isnan(xi["next_obs"][[1, 3]]).all() and np.isfinite(xi["next_obs"][[0, 2]]).all()
    with pytest.raises(ValueError, match="unknown ref_actions 'policy'"):
        EvaluateConfig(ref_actions="policy")

    res = run_evaluate(EvaluateConfig(**{**TINY, "ref_actions": "half-policy"}), tmp_path, plot=False)
    assert all(np.isfinite(v).all() for m in res["methods"].values() for k, v in m.items() if k.endswith("mse"))
    model = resolvent.load(tmp_path, "attention")
    with pytest.raises(ValueError, match=r"\['next_obs'\] are unknown"):
        model.q_values(lambda f: f["next_obs"][:, 0], np.zeros((2, 3)), np.zeros((2, 1)))
    assert model.q_values(lambda f: f["action"][:, 0] ** 2, np.zeros((2, 3)), np.zeros((2, 1))).shape == (2,)


def test_auto_keeps_the_longest_expansion_among_the_tied():
    """auto's rule on known scores: the candidates best (or within the tie band of the best) on
    agreement with FQE or on the Bellman residual; of them the longest expansion (then the best
    agreement); candidates outside both bands never."""
    scores = {"favor": [0.100, 0.100], "favor+k30": [0.110, 0.108], "favor+k60": [0.115, 0.117],
              "sf+k60": [0.300, 0.300], "fb": [0.105, 0.104]}
    methods = {m: {"trust_rel_rmse_each": {"heldout-0": v[:1], "heldout-1": v[1:]}} for m, v in scores.items()}
    assert choose_method(methods, tuple(methods))["chosen"] == "favor"     # a run without the residual
    pick = choose_method(methods, tuple(methods), tie=0.2)
    assert pick["chosen"] == "favor+k60" and "within 20% of the best" in pick["why"] and "sf+k60" not in \
        pick["why"].split("within")[1]
    assert choose_method(methods, ("favor", "fb"), tie=0.2)["chosen"] == "favor"   # no expansion: the lowest
    assert choose_method(methods, tuple(reversed(methods)), tie=0.2)["chosen"] == "favor+k60"
    # the residual: a candidate far from FQE but the most consistent with the data is kept, and
    # being the longest expansion, chosen; with a poor residual it is not
    bellman = {"favor": 0.5, "favor+k30": 0.3, "favor+k60": 0.25, "sf+k60": 0.2, "fb": 0.6}
    for m, v in bellman.items():
        methods[m]["trust_bellman_each"] = {"heldout-0": [v], "heldout-1": [v]}
    pick = choose_method(methods, tuple(methods))
    assert pick["chosen"] == "sf+k60" and pick["mean_trust_bellman"]["sf+k60"] == pytest.approx(0.2)
    assert "the best on agreement: favor" in pick["why"] and "the best on consistency: sf+k60" in pick["why"]
    methods["sf+k60"]["trust_bellman_each"] = {"heldout-0": [0.9], "heldout-1": [0.9]}
    assert choose_method(methods, tuple(methods), tie=0.2)["chosen"] == "favor+k60"
    # a residual band that holds every candidate tells none apart: agreement alone decides (else
    # sf+k60, the longest expansion, far from FQE, would be kept through it); one it leaves out
    # brings the band back
    for m in methods:
        methods[m]["trust_bellman_each"] = {"heldout-0": [1.0], "heldout-1": [1.0]}
    pick = choose_method(methods, tuple(methods), tie=0.2)
    assert pick["chosen"] == "favor+k60" and "tells none apart" in pick["why"]
    assert "sf+k60" not in pick["why"].split("within")[1]
    methods["favor"]["trust_bellman_each"] = {"heldout-0": [5.0], "heldout-1": [5.0]}
    pick = choose_method(methods, tuple(methods), tie=0.2)
    assert "tells none apart" not in pick["why"] and "sf+k60" in pick["why"].split("on consistency:")[1]
    with pytest.raises(ValueError, match="auto_tie"):
        EvaluateConfig(auto_tie=-0.1)


def test_a_kauto_closer_to_fqe_takes_the_longest_fixed_expansions_place():
    """Of auto's tied candidates the longest fixed expansion, unless a tied kauto agrees better with
    per-reward FQE: then the best such kauto (HalfCheetah-Vel expert: favor+kauto for favor+k60);
    a kauto outside both bands, or agreeing worse, never."""
    scores = {"favor+k10": 0.194, "favor+k60": 0.337, "favor+kauto": 0.208, "fb+kauto": 0.257, "favor+k400": 0.691}
    methods = {m: {"trust_rel_rmse_each": {"heldout-0": [v]}} for m, v in scores.items()}
    pick = choose_method(methods, tuple(methods), tie=1.5)
    assert pick["chosen"] == "favor+kauto" and "closer to FQE than the longest fixed expansion favor+k60" in pick["why"]
    methods["favor+kauto"]["trust_rel_rmse_each"] = {"heldout-0": [0.4]}      # agrees worse than favor+k60
    methods["fb+kauto"]["trust_rel_rmse_each"] = {"heldout-0": [0.5]}
    assert choose_method(methods, tuple(methods), tie=1.5)["chosen"] == "favor+k60"
    methods["favor+kauto"]["trust_rel_rmse_each"] = {"heldout-0": [0.3]}      # better, in the band: kept
    assert choose_method(methods, tuple(methods), tie=1.5)["chosen"] == "favor+kauto"
    assert choose_method(methods, tuple(methods), tie=0.2)["chosen"] == "favor+k10"   # out of a narrow band


def test_the_banks_answer_takes_autos_pick_where_it_is_as_consistent():
    """with_bank: auto's pick gives way to its own operator's bank answer whose Bellman residual is
    no larger and whose agreement is in auto's band (the lowest residual, ties to the fewest model
    steps); outside the band, or another operator's bank, never; nor one whose difference from
    G_K exceeds G_K's members' spread, where the run has both; a pick whose residual is unknown
    stays."""
    bellman = {"favor+k400": 0.076, "fb+k400": 0.080, "favor+b400+k30": 0.138, "favor+b400+k60": 0.138,
               "fb+b400+k30": 0.01}
    methods = {m: {"trust_rel_rmse_each": {"heldout-0": [0.1]}, "trust_bellman_each": {"heldout-0": [v]}}
               for m, v in bellman.items()}
    choice = choose_method(methods, ("favor+k400", "fb+k400"), tie=0.2)
    assert choice["chosen"] == "favor+k400" and with_bank(methods, choice, 0.2) == choice   # less consistent
    for m in ("favor+b400+k30", "favor+b400+k60"):
        methods[m]["trust_bellman_each"] = {"heldout-0": [0.074]}
    kept = with_bank(methods, choice, 0.2)
    assert kept["chosen"] == "favor+b400+k30" and kept["replaced"] == "favor+k400"       # equal: fewer steps
    assert "Bellman residual 0.074 against 0.076" in kept["why"] and kept["why"].startswith(choice["why"])
    methods["favor+b400+k60"]["trust_bellman_each"] = {"heldout-0": [0.070]}
    assert with_bank(methods, choice, 0.2)["chosen"] == "favor+b400+k60"                  # the lowest
    methods["favor+b400+k60"]["trust_rel_rmse_each"] = {"heldout-0": [0.13]}              # outside 0.1 x 1.2
    assert with_bank(methods, choice, 0.2)["chosen"] == "favor+b400+k30"
    assert with_bank(methods, choice, 0.5)["chosen"] == "favor+b400+k60"                  # inside 0.1 x 1.5
    # where the run has them, a bank answer departing from its operator's G_K by more than G_K's
    # spread among its members is not kept
    methods["favor+k400"]["trust_spread_each"] = {"heldout-0": [0.05]}
    methods["favor+b400+k30"]["trust_gap_each"] = {"heldout-0": [0.2]}
    methods["favor+b400+k60"]["trust_gap_each"] = {"heldout-0": [0.04]}
    assert with_bank(methods, choice, 0.2) == choice
    kept = with_bank(methods, choice, 0.5)
    assert kept["chosen"] == "favor+b400+k60" and "departure from favor+k400 0.040" in kept["why"]
    del methods["favor+k400"]["trust_spread_each"]                                       # a run made before
    assert with_bank(methods, choice, 0.2)["chosen"] == "favor+b400+k30"
    del methods["favor+k400"]["trust_bellman_each"]
    assert with_bank(methods, {**choice, "chosen": "favor+k400"}, 0.2)["chosen"] == "favor+k400"


def test_autos_pick_is_averaged_with_the_same_expansion_of_its_tied_operators():
    """with_partners: the pick with every other operator's answer at its horizon whose agreement is
    within (1 + tie) x the pick's, named by them, the pick first (Pendulum-Angle medium: fb+k400 and
    favor+k400 0.1265 against 0.1266); another horizon, the pick's own operator, one outside the
    band never; a bank answer and an operator alone stand as they are."""
    scores = {"fb+k400": 0.1265, "favor+k400": 0.1266, "sf+k400": 0.40, "attention+k400": 0.30, "favor+k150": 0.13,
              "favor": 0.2, "fb": 0.2}
    methods = {m: {"trust_rel_rmse_each": {"heldout-0": [v]}} for m, v in scores.items()}
    choice = choose_method(methods, tuple(methods), tie=1.5)
    assert choice["chosen"] == "fb+k400"
    mean = with_partners(choice, 1.5)
    assert mean["chosen"] == "fb+k400~favor+k400~attention+k400" and mean["alone"] == "fb+k400"
    assert mean["partners"] == ["favor+k400", "attention+k400"] and mean["why"].startswith(choice["why"])
    assert "averaged with favor+k400, attention+k400" in mean["why"]
    assert with_partners(choice, 0.0) == choice                           # 0.1266 > 0.1265: none tied
    assert with_partners(choice, 0.01)["partners"] == ["favor+k400"]
    assert split_method(mean["chosen"]) == ("fb~favor~attention", 400)
    assert with_partners({**choice, "chosen": "fb+b400+k30", "replaced": "fb+k400"}, 1.5)["chosen"] == "fb+b400+k30"
    alone = choose_method(methods, ("favor", "fb"), tie=1.5)
    assert with_partners(alone, 1.5) == alone                             # no expansion: not averaged
    with pytest.raises(ValueError, match="every answer at one horizon"):
        split_method("fb+k400~favor+k150")
    for bad in ("fb+k400~fb+k400", "fb+k400~"):
        with pytest.raises(ValueError, match="two or more distinct answers"):
            split_method(bad)


def test_a_familys_first_training_rewards_join_the_trust_reports_when_asked():
    """trust_family_rewards: the family's first training rewards are added after the generic
    held-out ones, named given:NAME, with the training rewards' own values on the data."""
    base = {**TINY, "trust": "on", "trust_rewards": 3, "trust_points": 16}
    plain = prepare(EvaluateConfig(**base))
    assert plain.sets["heldout"].names == ["heldout-0", "heldout-1", "heldout-2"]
    p = prepare(EvaluateConfig(**{**base, "trust_family_rewards": 2}))
    train = p.sets["train"].names
    assert p.sets["heldout"].names == plain.sets["heldout"].names + [f"given:{k}" for k in train[:2]]
    np.testing.assert_array_equal(np.asarray(p.sets["heldout"].values[3:]), np.asarray(p.sets["train"].values[:2]))
    np.testing.assert_array_equal(np.asarray(p.sets["heldout"].values[:3]), np.asarray(plain.sets["heldout"].values))
    with pytest.raises(ValueError, match="trust_family_rewards must be >= 0"):
        EvaluateConfig(**{**base, "trust_family_rewards": -1})
