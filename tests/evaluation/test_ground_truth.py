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


def test_ant_rollouts_stop_at_a_termination():
    """An Ant that falls (a narrow healthy range makes it fall fast): the rollout stops there,
    the terminating step carries terminated = 1 and nothing after it counts."""
    import dataclasses

    from resolvent.evaluation.ground_truth import rollout_ground_truth
    from resolvent.families import ANT_DIR
    from resolvent.policies import Actor

    env_id = "ResolventTestAntFalls-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point="gymnasium.envs.mujoco.ant_v5:AntEnv", max_episode_steps=1000,
                     kwargs={"healthy_z_range": (0.6, 1.0)})
    family = dataclasses.replace(ANT_DIR, env_id=env_id)
    rng = np.random.default_rng(0)
    actor = Actor(((rng.normal(size=(105, 32)).astype(np.float32), np.zeros(32, np.float32)),
                   (rng.normal(size=(32, 8)).astype(np.float32), np.zeros(8, np.float32))),
                  -np.ones(8, np.float32), np.ones(8, np.float32))
    gt = rollout_ground_truth(family, actor, n=4, gamma=0.97, tol=1e-2, seed=1)
    lengths = gt.alive.sum(axis=1).astype(int)
    assert (lengths < gt.horizon).any(), "no rollout terminated"
    for i, n_alive in enumerate(lengths):
        assert gt.alive[i, :n_alive].all() and not gt.alive[i, n_alive:].any()
        if n_alive < gt.horizon:
            assert gt.features["terminated"][i, n_alive - 1] == 1.0
            assert not gt.features["terminated"][i, :n_alive - 1].any()
    # q is the discounted sum of the family's reward up to and including the terminating step
    theta = 0.3
    q = gt.q(family.reward_callable(theta))
    i = int(np.argmin(lengths))
    feats = {k: v[i, :lengths[i]] for k, v in gt.features.items()}
    r = np.asarray(family.reward(theta, feats), np.float64)
    np.testing.assert_allclose(q[i], (r * 0.97 ** np.arange(len(r))).sum(), rtol=1e-5)
