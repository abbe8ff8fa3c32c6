"""Every registered termination rule is the environment's own: read on the transitions of random
(MountainCar: energy-pumping) play, it ends exactly where the environment's ``terminated`` does."""
import gymnasium as gym
import numpy as np
import pytest

from resolvent.endings import TERMINALS, rule_name, terminal_for


@pytest.mark.parametrize("env_id", sorted(TERMINALS))
def test_a_rule_ends_where_its_environment_does(env_id):
    env = gym.make(env_id)
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    rows = {"obs": [], "action": [], "next_obs": []}
    ended = []
    for _ in range(2000):
        a = (np.array([1.0 if obs[1] >= 0 else -1.0], np.float32) if env_id.startswith("MountainCar")
             else env.action_space.sample())
        nxt, _, terminated, truncated, _ = env.step(a)
        for k, v in (("obs", obs), ("action", a), ("next_obs", nxt)):
            rows[k].append(np.asarray(v, np.float32))
        ended.append(terminated)
        obs = env.reset()[0] if terminated or truncated else nxt
    d = np.asarray(terminal_for(env_id)({k: np.stack(v) for k, v in rows.items()}))
    assert 0 < sum(ended) < len(ended)                    # both kinds of transitions seen
    np.testing.assert_array_equal(d, np.asarray(ended, np.float32))


def test_unknown_environments_have_no_rule():
    assert terminal_for("HalfCheetah-v5") is None and terminal_for(None) is None
    assert rule_name(TERMINALS["Ant-v5"]) == "resolvent.endings:ant"
