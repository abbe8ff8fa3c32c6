import gymnasium as gym
import minari
import numpy as np
import pytest

from resolvent.data import (KINDS, behaviour_policy, collect_episodes, dataset_id, load_transitions,
                            reference_indices, validate_transitions)
from resolvent.data.dataset import save_minari, transitions_from_minari
from resolvent.families import HALFCHEETAH_VEL, PENDULUM_ANGLE
from resolvent.policies import load_target_policy


@pytest.fixture(scope="module")
def actor():
    return load_target_policy("pendulum-angle")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_pendulum_datasets_at_paper_size_in_minari(kind, actor):
    data = load_transitions(PENDULUM_ANGLE, kind, actor=actor)
    assert len(data["obs"]) == 20_000
    ds = minari.load_dataset(dataset_id(PENDULUM_ANGLE, kind))
    assert ds.total_steps == 20_000
    # Pendulum never terminates; every episode ends in a time-limit truncation
    assert not data["terminated"].any()
    assert data["truncated"].sum() == ds.total_episodes
    # consecutive transitions chain inside an episode
    cont = ~data["truncated"][:-1]
    np.testing.assert_array_equal(data["next_obs"][:-1][cont], data["obs"][1:][cont])
    # the stored reward is the base task's own (theta0 = 0)
    ep = next(iter(ds.iterate_episodes()))
    np.testing.assert_allclose(ep.rewards, np.asarray(PENDULUM_ANGLE.reward(0.0, {
        "obs": ep.observations[:-1], "action": ep.actions})), rtol=1e-5)


def test_expert_and_medium_follow_the_behaviour_protocol(actor):
    expert = load_transitions(PENDULUM_ANGLE, "expert", actor=actor)
    medium = load_transitions(PENDULUM_ANGLE, "medium", actor=actor)
    dev = lambda d: np.abs(d["action"] - actor(d["obs"]))[:, 0]  # noqa: E731
    # medium deviates from pi more often than expert (p = 0.3 vs 0.1)
    assert (dev(medium) > 1.5).mean() > 2 * (dev(expert) > 1.5).mean()
    assert np.abs(expert["action"]).max() <= 2.0


def test_behaviour_policy_p_and_sigma():
    space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
    rng = np.random.default_rng(0)
    pol = behaviour_policy(lambda o: np.zeros((len(o), 1), np.float32), space, p=0.3, sigma=0.1, rng=rng)
    a = pol(np.zeros((200_000, 3)))[:, 0]
    # a mixture: w.p. 0.7 N(0, (0.1 * 2)^2), w.p. 0.3 U[-2, 2]
    assert abs(np.mean(np.abs(a) > 1.0) - 0.3 * 0.5) < 0.01
    assert abs(a.var() - (0.7 * 0.2**2 + 0.3 * 4**2 / 12)) < 0.02
    assert np.abs(a).max() <= 2.0


def test_mujoco_extras_go_to_infos(actor):
    env = gym.make("HalfCheetah-v5")
    rand = lambda o: np.stack([env.action_space.sample() for _ in o])  # noqa: E731
    eps = collect_episodes(HALFCHEETAH_VEL, rand, 120, seed=0, n_envs=2)
    assert sum(len(e["actions"]) for e in eps) == 120
    for e in eps:
        e["rewards"] = np.zeros(len(e["actions"]), np.float32)
    ds = save_minari(HALFCHEETAH_VEL, "expert", 0, eps, actor, dataset_name="resolvent/test/cheetah-v0")
    ep = next(iter(ds.iterate_episodes()))
    assert "x_velocity" in ep.infos and len(ep.infos["x_velocity"]) == len(ep.actions) + 1
    data = transitions_from_minari(ds, HALFCHEETAH_VEL)
    assert data["x_velocity"].shape == (120,) and np.abs(data["x_velocity"]).max() > 0


def test_validation_names_the_field():
    n = 10
    good = {"obs": np.zeros((n, 3)), "action": np.zeros((n, 1)), "next_obs": np.zeros((n, 3)),
            "terminated": np.zeros(n, bool), "truncated": np.zeros(n, bool)}
    validate_transitions(good, PENDULUM_ANGLE, 3, 1)
    bad = dict(good, next_obs=good["next_obs"].copy())
    bad["next_obs"][4, 1] = np.nan
    with pytest.raises(ValueError, match="'next_obs' has a non-finite value .* transition 4"):
        validate_transitions(bad, PENDULUM_ANGLE, 3, 1)
    with pytest.raises(ValueError, match="'action' has shape"):
        validate_transitions(dict(good, action=np.zeros((n, 2))), PENDULUM_ANGLE, 3, 1)
    with pytest.raises(ValueError, match="lacks the field 'x_velocity'"):
        validate_transitions(good, HALFCHEETAH_VEL, 3, 1)


def test_unknown_kind_and_reference_points():
    with pytest.raises(ValueError, match="unknown dataset kind 'random'"):
        dataset_id(PENDULUM_ANGLE, "random")
    idx = reference_indices(100, 16, seed=0)
    assert len(set(idx)) == 16 and idx.max() < 100
    np.testing.assert_array_equal(idx, reference_indices(100, 16, seed=0))
    with pytest.raises(ValueError, match="only 10 transitions"):
        reference_indices(10, 16, seed=0)


def test_replay_regenerated_from_snapshots(tmp_path):
    """MuJoCo replay buffers ship as actor snapshots: each tenth of the dataset comes from its
    snapshot with TD3's exploration noise, after as many random actions as TD3's warm-up."""
    from resolvent.data.dataset import episode_features, replay_from_snapshots
    from resolvent.policies.actor import load_snapshots, save_snapshots

    rng = np.random.default_rng(0)
    snaps = [((0.3 * rng.normal(size=(17, 16))).astype(np.float32), np.zeros(16, np.float32),
              (0.3 * rng.normal(size=(16, 6))).astype(np.float32), np.zeros(6, np.float32))
             for _ in range(10)]
    path = tmp_path / "snapshots.npz"
    save_snapshots(path, [((w0, b0), (w1, b1)) for w0, b0, w1, b1 in snaps],
                   [int((k + 0.5) * 1000) for k in range(10)], learning_starts=50, steps=10_000)
    episodes = replay_from_snapshots(HALFCHEETAH_VEL, 1000, seed=0, snapshots_path=path)
    parts = [episode_features(ep, HALFCHEETAH_VEL) for ep in episodes]
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    assert len(data["obs"]) == 1000 and "x_velocity" in data
    # warm-up: 100 * 50 * 10 / 10000 = 50 uniformly random actions first, then snapshot 0 + noise
    loaded = load_snapshots("halfcheetah-vel", -np.ones(6), np.ones(6), path)
    warm, first = data["action"][:50], data["action"][50:100]
    assert np.abs(warm).mean() > 0.4                                    # U[-1, 1]: mean |a| = 0.5
    noise = first - np.clip(loaded.actors[0](data["obs"][50:100]), -1, 1)
    assert 0.05 < np.abs(noise).mean() < 0.11                          # N(0, 0.1): mean |n| = 0.08
    last = data["action"][-100:] - loaded.actors[9](data["obs"][-100:])
    assert 0.05 < np.abs(last).mean() < 0.11
