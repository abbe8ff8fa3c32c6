"""Episodic returns in lockstep: the family's original reward is the environment's own."""
import gymnasium as gym
import numpy as np
import pytest

from resolvent.evaluation import actor_returns, episodic_returns, rollout
from resolvent.families import get_family

FAMILY = get_family("pendulum-angle")


def env_returns(policy, episodes, seed):
    """Plain Gymnasium loop, one episode at a time: the sum of the environment's rewards."""
    out = []
    for e in range(episodes):
        env = gym.make(FAMILY.env_id)
        obs, _ = env.reset(seed=seed * 1000 + e)
        total, done = 0.0, False
        while not done:
            obs, r, term, trunc, _ = env.step(policy(obs[None])[0])
            total, done = total + r, term or trunc
        out.append(total)
    return np.array(out)


def torque(obs):                                  # a deterministic state feedback, (n, 3) -> (n, 1)
    return np.clip(-2.0 * obs[:, 1:2] - 0.5 * obs[:, 2:3], -2, 2).astype(np.float32)


def test_original_reward_return_is_the_environments_return():
    got = actor_returns(FAMILY, torque, [FAMILY.reward_callable(FAMILY.original_param)], 3, seed=4,
                        progress=False)[0]
    np.testing.assert_allclose(got, env_returns(torque, 3, 4), rtol=1e-4)


def test_policies_in_lockstep_each_under_its_own_reward():
    rewards = [FAMILY.reward_callable(0.0), FAMILY.reward_callable(1.0)]
    calls = []

    def act(obs):                                 # (P, E, ds) -> (P, E, da): policy 1 does nothing
        calls.append(obs.shape)
        a = torque(obs.reshape(-1, 3)).reshape(obs.shape[:2] + (1,))
        a[1] = 0.0
        return a

    ret = episodic_returns(FAMILY, act, rewards, 2, seed=1, progress=False)
    assert ret.shape == (2, 2) and calls[0] == (2, 2, 3) and len(calls) == 200   # one call a step
    np.testing.assert_allclose(ret[0], env_returns(torque, 2, 1), rtol=1e-4)
    lazy = env_returns(lambda o: np.zeros((1, 1), np.float32), 2, 1)
    assert not np.allclose(ret[1], lazy)          # scored under theta0 = 1, not the original
    ro = rollout(FAMILY, act, 2, 2, seed=1, progress=False)
    np.testing.assert_allclose(ro.returns(FAMILY.reward_callable(0.0), 1), lazy, rtol=1e-4)


def test_bad_counts():
    with pytest.raises(ValueError, match="at least one"):
        episodic_returns(FAMILY, torque, [], 2, progress=False)
