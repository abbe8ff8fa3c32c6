import gymnasium as gym
import numpy as np
import pytest

from resolvent.experiments import OptimizeConfig
from resolvent.experiments.baselines import logged_test_rewards, run_baselines
from resolvent.experiments.optimize import prepare
from resolvent.families import get_family
from resolvent.policies.td3 import reward_env_id


def test_reward_wrapper_pays_the_family_reward():
    family = get_family("pendulum-angle")
    wrapped, base = gym.make(reward_env_id(family, 0.0)), gym.make(family.env_id)
    shifted = gym.make(reward_env_id(family, 1.0))
    for env in (wrapped, base, shifted):
        env.reset(seed=3)
    for t in range(20):
        a = np.array([np.sin(t)], np.float32)
        r0, r1, r2 = wrapped.step(a)[1], base.step(a)[1], shifted.step(a)[1]
        assert r0 == pytest.approx(r1, rel=1e-5, abs=1e-6) and r2 != pytest.approx(r1)


def test_baselines_use_the_experiments_test_rewards(tmp_path):
    cfg = OptimizeConfig(n_return_rewards=3, seed=2, eval_episodes=1)
    names, params = logged_test_rewards(cfg)
    assert names == prepare(cfg, progress=False).return_names[1:]
    lo, hi = get_family("pendulum-angle").test_range
    assert np.all(np.diff(params) > 0) and lo <= params[0] and params[-1] <= hi   # stratified
    with pytest.raises(ValueError, match="unknown baseline kind 'sac'"):
        run_baselines(cfg, tmp_path, kinds=("sac",))
