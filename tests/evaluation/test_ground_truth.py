import gymnasium as gym
import jax.numpy as jnp
import numpy as np

from resolvent.evaluation import GroundTruth, horizon, load_ground_truth
from resolvent.families import PENDULUM_ANGLE
from resolvent.policies import load_target_policy


def test_one_rollout_serves_every_reward_and_matches_a_direct_rollout():
    actor = load_target_policy("pendulum-angle")
    gt = load_ground_truth(PENDULUM_ANGLE, actor, n=3, gamma=0.95, tol=1e-6, seed=5)
    assert gt.horizon == horizon(0.95, 1e-6)
    for theta0 in (0.0, 0.9):
        env = gym.make("Pendulum-v1", max_episode_steps=10_000)
        env.reset(seed=0)
        th = np.arctan2(gt.obs0[1, 1], gt.obs0[1, 0])
        env.unwrapped.state = np.array([th, gt.obs0[1, 2]])
        obs, a, total = gt.obs0[1], gt.action0[1], 0.0
        for t in range(gt.horizon):
            r = PENDULUM_ANGLE.reward(theta0, {"obs": obs[None], "action": np.asarray(a)[None]})
            total += 0.95**t * float(r[0])
            obs, *_ = env.step(a)
            a = actor(obs[None])[0]
        q = gt.q(PENDULUM_ANGLE.reward_callable(theta0))
        assert abs(q[1] - total) < 1e-3 * max(1.0, abs(total))
    # cached: a second load reads the same numbers
    again = load_ground_truth(PENDULUM_ANGLE, actor, n=3, gamma=0.95, tol=1e-6, seed=5)
    np.testing.assert_array_equal(again.q_family(PENDULUM_ANGLE, [0.3]), gt.q_family(PENDULUM_ANGLE, [0.3]))


def test_termination_stops_the_sum():
    alive = np.array([[1, 1, 1, 0, 0]], np.float32)     # terminated at step 2
    gt = GroundTruth(np.zeros((1, 1)), np.zeros((1, 1)), {"r": np.ones((1, 5), np.float32)}, alive, 0.5)
    assert gt.q(lambda f: jnp.asarray(f["r"])) == [1 + 0.5 + 0.25]
