"""Evaluation points where Q varies: reproducible per seed, restored dataset states."""
import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from resolvent.data import load_transitions
from resolvent.evaluation import PointsConfig, load_points
from resolvent.evaluation.points import dataset_points, trajectory_points
from resolvent.families import FAMILIES, PENDULUM_ANGLE
from resolvent.policies import load_target_policy
from resolvent.restore import RESTORES, restore_for


def test_trajectory_points_same_seed_same_points_other_seed_other_points():
    actor = load_target_policy("pendulum-angle")
    cfg = PointsConfig(n=6, max_steps=30, tol=1e-2, seed=3)
    a, b = trajectory_points(PENDULUM_ANGLE, actor, cfg), trajectory_points(PENDULUM_ANGLE, actor, cfg)
    np.testing.assert_array_equal(a.obs0, b.obs0)
    np.testing.assert_array_equal(a.action0, b.action0)
    np.testing.assert_array_equal(a.features["obs"], b.features["obs"])
    c = trajectory_points(PENDULUM_ANGLE, actor, PointsConfig(n=6, max_steps=30, tol=1e-2, seed=4))
    assert not np.allclose(a.obs0, c.obs0)
    # odd points take a uniform first action, even ones pi(s) perturbed: both within the bounds
    assert np.all(np.abs(a.action0) <= 2.0) and not np.allclose(a.action0[0::2], actor(a.obs0[0::2]))


@pytest.mark.parametrize("env_id", sorted(RESTORES))
def test_restore_sets_the_simulator_to_an_observation(env_id):
    """Set to another episode's observation, a simulator gives that observation back and steps
    as the original does under the same actions (the dynamics are deterministic). Half-strength
    actions: Hopper and Walker2d clip their observed velocities at 10, which a fall reaches."""
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(20):
        obs, *_ = env.step(0.5 * env.action_space.sample())
    other = gym.make(env_id)
    other.reset(seed=9)
    restore_for(env_id)(other, obs)
    d = min(len(obs), 27)                                   # Ant: the contact forces follow the state
    got = other.unwrapped._get_obs() if hasattr(other.unwrapped, "_get_obs") else other.unwrapped.state
    # 1e-5: Reacher observes its fingertip at the last substep's start, not at the state stepped to
    np.testing.assert_allclose(np.asarray(got)[:d], obs[:d], atol=1e-5)
    for _ in range(5):
        action = 0.5 * env.action_space.sample()
        np.testing.assert_allclose(other.step(action)[0][:d], env.step(action)[0][:d], atol=1e-5)


def test_every_family_has_a_restore_and_an_unknown_environment_none():
    assert all(restore_for(f.env_id) is not None for f in FAMILIES.values())
    assert restore_for("CartPole-v1") is None and restore_for(None) is None


def test_dataset_points_of_an_environment_without_a_restore_are_left_out_with_a_warning():
    spec = dataclasses.replace(PENDULUM_ANGLE, env_id="CartPole-v1")
    with pytest.warns(UserWarning, match="no dataset points: no known way to set 'CartPole-v1'"):
        assert load_points(spec, None, PointsConfig(kinds=("dataset",)), "test", {"obs": np.zeros((4, 3))}) == {}


def test_dataset_points_replay_the_dataset_and_are_cached():
    actor = load_target_policy("pendulum-angle")
    data = load_transitions(PENDULUM_ANGLE, "expert", 0, actor)
    idx = np.array([5, 50, 500, 5000])
    cfg = PointsConfig(n=4, tol=1e-2)
    restore = restore_for(PENDULUM_ANGLE.env_id)
    gt = dataset_points(PENDULUM_ANGLE, actor, data["obs"][idx], data["action"][idx], restore, cfg)
    np.testing.assert_array_equal(gt.obs0, data["obs"][idx])
    np.testing.assert_array_equal(gt.action0[0::2], data["action"][idx][0::2])     # the dataset's action ...
    assert not np.allclose(gt.action0[1::2], data["action"][idx][1::2])            # ... or a perturbed one
    # deterministic dynamics: the dataset's own action leads to the dataset's own next state
    np.testing.assert_allclose(gt.features["next_obs"][0::2, 0], data["next_obs"][idx][0::2], atol=1e-4)
    both = load_points(PENDULUM_ANGLE, actor, PointsConfig(kinds=("trajectory", "dataset"), n=4, max_steps=10,
                                                           tol=1e-2), "test", data)
    again = load_points(PENDULUM_ANGLE, actor, PointsConfig(kinds=("trajectory", "dataset"), n=4, max_steps=10,
                                                            tol=1e-2), "test", data)
    assert set(both) == {"trajectory", "dataset"}
    for kind in both:
        np.testing.assert_array_equal(both[kind].features["obs"], again[kind].features["obs"])
