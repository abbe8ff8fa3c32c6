"""Each family's target policy was trained on the family's own original member (paper 6.2)."""
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
