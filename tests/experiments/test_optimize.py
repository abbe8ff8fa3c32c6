import json

import numpy as np
import pytest

import resolvent
from resolvent.experiments import OptimizeConfig, RunDir, run_optimize

TINY = dict(steps=20, eval_every=10, checkpoint_every=10, seeds=2, m=16, n_train_rewards=8,
            hidden=(16,), features=8, heads=2, eval_episodes=2, n_return_rewards=2, batch_size=32,
            vae_hidden=(16,), actor_hidden=(16,), eval_samples=4, n_samples=2)


def metrics(path):
    return [(r["method"], r["seed"], r["step"], r["return"], tuple(r["test_returns"].values()))
            for r in RunDir(path).read_metrics()]


@pytest.fixture(scope="module")
def dqn_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("opt") / "dqn"
    return out, run_optimize(OptimizeConfig(**TINY), out)


def test_dqn_run_writes_everything(dqn_run):
    out, res = dqn_run
    assert res["task"] == "optimize" and res["algorithm"] == "dqn" and np.isfinite(res["target_return"])
    saved = json.loads((out / "results.json").read_text())
    assert saved == res and set(saved["methods"]) == {"maxout", "vanilla"}
    for m in saved["methods"].values():
        assert len(m["return"]) == 2 and m["steps"] == 20 and len(m["test_returns"]) == 2
        assert all(len(v) == 2 for v in m["test_returns"].values())
    assert set(res["target_test_returns"]) == set(m["test_returns"])
    assert {r["step"] for r in RunDir(out).read_metrics()} == {0, 10, 20}
    assert (out / "returns.png").stat().st_size > 10_000
    assert json.loads((out / "config.json").read_text())["task"] == "optimize"
    with pytest.raises(FileExistsError, match="--resume"):
        run_optimize(OptimizeConfig(**TINY), out)


def test_same_seed_same_numbers(dqn_run, tmp_path):
    out, _ = dqn_run
    run_optimize(OptimizeConfig(**{**TINY, "methods": ("vanilla",)}), tmp_path / "again", plot=False)
    assert metrics(tmp_path / "again") == [r for r in metrics(out) if r[0] == "vanilla"]
    rows = [r for r in metrics(out) if r[2] == 20 and r[0] == "maxout"]
    assert rows[0][3:] != rows[1][3:]                              # the two seeds differ


def test_resume_a_finished_run_is_a_no_op(dqn_run):
    out, res = dqn_run
    before = (out / "metrics.jsonl").read_text()
    assert run_optimize(OptimizeConfig(), out, resume=True, plot=False)["methods"] == res["methods"]
    assert (out / "metrics.jsonl").read_text() == before


def test_saved_policy_acts_in_bounds_and_reloads_identically(dqn_run, tmp_path):
    out, _ = dqn_run
    model = resolvent.load(out, method="maxout")
    policy = model.policy(model.family_reward(0.5))
    obs = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, -2.0]], np.float32)
    acts = policy(obs)
    assert acts.shape == (2, 1) and np.all(np.abs(acts) <= 2.0)
    assert policy(obs[0]).shape == (1,)
    grid = np.linspace(-2, 2, 11)
    assert np.all(np.min(np.abs(acts - grid[None]), axis=1) < 1e-6)   # greedy over the grid
    model.save(tmp_path)
    again = resolvent.OperatorModel.load(tmp_path, "maxout")
    np.testing.assert_array_equal(again.policy(model.family_reward(0.5))(obs), acts)
    q = model.q_values(model.family_reward(0.5), obs, acts, seed=None)
    assert q.shape == (2, 2)
    with pytest.raises(ValueError, match="observation must have shape"):
        policy(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="seed index 5"):
        model.policy(model.family_reward(0.5), seed=5)


def test_bcq_run_and_its_policy(tmp_path):
    res = run_optimize(OptimizeConfig(**{**TINY, "algorithm": "bcq", "methods": ("maxout",),
                                          "steps": 10, "checkpoint_every": 10}), tmp_path, plot=False)
    assert res["algorithm"] == "bcq" and len(res["methods"]["maxout"]["return"]) == 2
    model = resolvent.load(tmp_path, "maxout")
    policy = model.policy(model.family_reward(-0.3), seed=1)
    a = policy(np.array([0.0, 1.0, 0.5], np.float32))
    assert a.shape == (1,) and -2.0 <= a[0] <= 2.0
    again_dir = tmp_path / "copy"
    model.save(again_dir)
    again = resolvent.OperatorModel.load(again_dir, "maxout")
    obs = np.random.default_rng(0).normal(size=(3, 3)).astype(np.float32)
    np.testing.assert_array_equal(again.policy(model.family_reward(-0.3), key=7)(obs),
                                  model.policy(model.family_reward(-0.3), key=7)(obs))


def test_evaluation_models_have_no_policy(tmp_path):
    from resolvent.experiments import EvaluateConfig, run_evaluate
    run_evaluate(EvaluateConfig(methods=("attention",), steps=10, log_every=10, checkpoint_every=10,
                                seeds=1, m=8, n_initial=2, n_train_rewards=4, n_test_rewards=2,
                                hidden=(8,), features=4, gt_tol=1e-2), tmp_path, plot=False)
    with pytest.raises(ValueError, match="resolvent optimize"):
        resolvent.load(tmp_path, "attention").policy(lambda f: f["obs"][:, 0])


@pytest.mark.parametrize("bad, match", [
    (dict(methods=("attention",)), "unknown method 'attention' for optimize"),
    (dict(algorithm="sac"), "unknown algorithm 'sac'"),
    (dict(eval_every=3, checkpoint_every=10), "multiple of eval_every"),
    (dict(n_actions=1), "n_actions must be >= 2"),
    (dict(eval_episodes=0), "eval_episodes must be >= 1"),
    (dict(dataset="random"), "unknown dataset kind 'random'"),
])
def test_bad_config(bad, match):
    with pytest.raises(ValueError, match=match):
        OptimizeConfig(**{**TINY, **bad})


def test_unknown_config_key():
    with pytest.raises(ValueError, match=r"unknown config keys \['episodes'\]"):
        OptimizeConfig.from_dict({"episodes": 3})
    with pytest.raises(ValueError, match="not an optimize run"):
        OptimizeConfig.from_dict({"task": "evaluate"})


def test_killed_run_resumes_to_the_same_result(tmp_path, monkeypatch):
    cfg = OptimizeConfig(**{**TINY, "methods": ("vanilla",), "seeds": 1, "steps": 30})
    run_optimize(cfg, tmp_path / "full", plot=False)
    original = RunDir.save_checkpoint

    def dying(self, method, tree):
        original(self, method, tree)
        if int(tree["step"]) == 10:
            raise KeyboardInterrupt

    monkeypatch.setattr(RunDir, "save_checkpoint", dying)
    with pytest.raises(KeyboardInterrupt):
        run_optimize(cfg, tmp_path / "killed", plot=False)
    monkeypatch.setattr(RunDir, "save_checkpoint", original)
    run_optimize(cfg, tmp_path / "killed", resume=True, plot=False)
    assert metrics(tmp_path / "killed") == metrics(tmp_path / "full")


def test_bcq_state_checkpoints_round_trip(tmp_path):
    import jax
    from resolvent.algorithms import bcq
    from resolvent.operators import make_network
    k = jax.random.split(jax.random.PRNGKey(0), 3)
    data = bcq.BCQData(s=jax.random.normal(k[0], (8, 3)), a=jax.numpy.zeros((8, 1)),
                       next_s=jax.random.normal(k[1], (8, 3)), rewards=jax.numpy.ones((2, 8)),
                       done=jax.numpy.zeros(8), xi=jax.random.normal(k[2], (4, 4)),
                       enc=jax.numpy.ones((2, 4)), a_shift=jax.numpy.zeros(1), a_scale=jax.numpy.ones(1))
    config = bcq.BCQConfig()
    nets = bcq.make_nets(make_network("maxout", 0.9, (4,), 2, 0, heads=2), 1, config, (4,), (4,), 2)
    state = bcq.make_initializer(nets, config)(jax.random.split(k[0], 2), data)
    run = RunDir(tmp_path)
    run.save_checkpoint("maxout", {"state": state, "step": 3})
    template = {"state": jax.tree_util.tree_map(np.zeros_like, state), "step": 0}
    back = run.load_checkpoint("maxout", template)
    assert back["step"] == 3
    for a, b in zip(jax.tree_util.tree_leaves(back["state"]), jax.tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(a, b)
