"""Each family's target policy was trained on the family's own original member (paper 6.2)."""
import gymnasium as gym
import numpy as np
import pytest

from resolvent.families import FAMILIES
from resolvent.policies import load_target_policy, target_policy_info
from resolvent.policies.td3 import TransitionRecorder, training_env


@pytest.mark.parametrize("name", list(FAMILIES))
def test_target_policy_trained_on_original_member(name):
    """On real transitions of the target policy (with behaviour noise, so that the actions vary),
    the reward of the environment it was trained in equals the family member ``original_param``."""
    family = FAMILIES[name]
    info = target_policy_info(name)
    assert info["reward"][family.param_name] == family.original_param
    actor = load_target_policy(name)
    env = TransitionRecorder(training_env(family, info), family.extras)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    rewards = []
    for _ in range(300):
        a = actor(obs[None])[0] + 0.1 * rng.standard_normal(actor.action_dim).astype(np.float32)
        a = np.clip(a, actor.low, actor.high)
        obs, r, term, trunc, _ = env.step(a)
        rewards.append(r)
        if term or trunc:
            obs, _ = env.reset()
    feats = env.buffer()
    member = np.asarray(family.reward(family.original_param, feats))
    np.testing.assert_allclose(member, np.asarray(rewards), rtol=1e-5, atol=1e-4)


def test_metadata_must_name_the_reward():
    family = FAMILIES["pendulum-angle"]
    with pytest.raises(ValueError, match="does not say which reward"):
        training_env(family, {"td3_steps": 10})
    with pytest.raises(ValueError, match="unknown reward source 'elsewhere'"):
        training_env(family, {"reward": {"theta0": 0.0, "source": "elsewhere"}})


def test_halfcheetah_target_metadata_from_gymnasium_alone():
    """HalfCheetah-Vel's target trained through the FamilyReward wrapper, whose reward is the
    family's own formula: the test above cannot tell it from the member. Here the member comes from
    Gymnasium alone, -|v - 1| - 0.05 ||a||^2 = min(r_- + 1, r_+ - 1) with r_+- HalfCheetah-v5's own
    reward at forward weight +-1 and control cost 0.05: on the episodes its metadata was measured on
    (evaluate_target's starts), the target's return and speed are the metadata's, and HalfCheetah's
    own run-fast return is another."""
    info = target_policy_info("halfcheetah-vel")
    assert (info["reward"]["v_target"], info["reward"]["source"]) == (1.0, "wrapper")
    actor = load_target_policy("halfcheetah-vel")
    envs = [gym.make("HalfCheetah-v5", forward_reward_weight=w, ctrl_cost_weight=0.05) for w in (-1.0, 1.0)]
    envs.append(gym.make("HalfCheetah-v5"))                                   # its own run-fast reward
    member, own, speed = [], [], []
    for e in range(info["eval_episodes"]):
        obs = [env.reset(seed=10_000 * 1000 + e)[0] for env in envs]
        done = False
        while not done:
            a = actor(obs[0][None])[0]
            steps = [env.step(a) for env in envs]
            (o_minus, r_minus, term, trunc, inf), (_, r_plus, *_), (_, r_own, *_) = steps
            member.append(min(r_minus + 1.0, r_plus - 1.0))
            own.append(r_own)
            speed.append(inf["x_velocity"])
            obs, done = [s[0] for s in steps], term or trunc
    episodes = info["eval_episodes"]
    assert sum(member) / episodes == pytest.approx(info["average_return"], rel=1e-3)
    assert np.mean(speed) == pytest.approx(info["mean_x_velocity"], rel=1e-3)
    assert abs(sum(own) / episodes - info["average_return"]) > 100
