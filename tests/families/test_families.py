import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from resolvent.families import ANT_DIR, FAMILIES, HALFCHEETAH_VEL, PENDULUM_ANGLE, get_family, wrap


def rollout(env_id, steps, seed=0, action_scale=1.0, **make_kwargs):
    env = gym.make(env_id, **make_kwargs)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(steps):
        a = rng.uniform(env.action_space.low, env.action_space.high).astype(np.float32) * action_scale
        nxt, r, term, trunc, info = env.step(a)
        rows.append((obs, a, nxt, r, term, info))
        obs = nxt
        if term or trunc:
            obs, _ = env.reset()
    feats = {"obs": np.stack([x[0] for x in rows]), "action": np.stack([x[1] for x in rows]),
             "next_obs": np.stack([x[2] for x in rows]), "terminated": np.array([x[4] for x in rows])}
    for k in ("x_velocity", "y_velocity"):
        if k in rows[0][5]:
            feats[k] = np.array([x[5][k] for x in rows], np.float32)
    return feats, np.array([x[3] for x in rows]), [x[5] for x in rows]


def test_pendulum_member_zero_is_pendulum_reward():
    feats, env_r, _ = rollout("Pendulum-v1", 400, action_scale=1.5)  # also actions past the bound
    ours = np.asarray(PENDULUM_ANGLE.reward(0.0, feats))
    np.testing.assert_allclose(ours, env_r, rtol=1e-5, atol=1e-5)


def test_pendulum_angle_member_is_pendulum_reward_of_the_rotated_state():
    """Member th0 at angle th is Pendulum-v1's own reward at angle th - th0 (same velocity and
    action): Gymnasium computes it from the rotated state, set in the simulator."""
    feats, _, _ = rollout("Pendulum-v1", 60, action_scale=1.5)
    env = gym.make("Pendulum-v1").unwrapped
    env.reset(seed=0)
    th = np.arctan2(feats["obs"][:, 1], feats["obs"][:, 0])
    for th0 in (0.7, -2.5, np.pi):
        want = []
        for angle, vel, a in zip(th - th0, feats["obs"][:, 2], feats["action"]):
            env.state = np.array([angle, vel], np.float64)
            want.append(env.step(a)[1])
        np.testing.assert_allclose(np.asarray(PENDULUM_ANGLE.reward(th0, feats)), want, rtol=1e-5, atol=1e-5)
    assert float(wrap(jnp.float32(np.pi + 0.1))) == pytest.approx(-np.pi + 0.1, abs=1e-5)


def test_halfcheetah_vel_uses_info_velocity():
    feats, env_r, infos = rollout("HalfCheetah-v5", 200)
    v = np.array([i["x_velocity"] for i in infos])
    ctrl = np.array([i["reward_ctrl"] for i in infos])
    # the env's own pieces: forward reward is x_velocity, ctrl cost is 0.1 ||a||^2
    np.testing.assert_allclose(env_r, v + ctrl, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(-0.1 * (feats["action"] ** 2).sum(1), ctrl, rtol=1e-5, atol=1e-6)
    # the member from Gymnasium alone: -|v - vt| - 0.05 ||a||^2 = min(r_- + vt, r_+ - vt), r_+- the
    # env's own reward at forward weight +-1 and control cost 0.05 on the same trajectory
    _, r_minus, _ = rollout("HalfCheetah-v5", 200, forward_reward_weight=-1.0, ctrl_cost_weight=0.05)
    _, r_plus, _ = rollout("HalfCheetah-v5", 200, forward_reward_weight=1.0, ctrl_cost_weight=0.05)
    for vt in (1.1, 0.6):
        want = np.minimum(r_minus + vt, r_plus - vt)
        np.testing.assert_allclose(np.asarray(HALFCHEETAH_VEL.reward(vt, feats)), want, rtol=1e-5, atol=1e-5)
    # the observation's velocity is not the finite difference: it must be stored
    assert not np.allclose(feats["next_obs"][:, 8], v, atol=1e-3)


def test_ant_dir_member_zero_is_ant_reward():
    feats, env_r, infos = rollout("Ant-v5", 400)
    assert feats["obs"].shape[1] == 105
    ours = np.asarray(ANT_DIR.reward(0.0, feats))
    np.testing.assert_allclose(ours, env_r, rtol=1e-4, atol=1e-4)
    th = 0.5
    want = (feats["x_velocity"] * np.cos(th) + feats["y_velocity"] * np.sin(th)
            + np.array([i["reward_ctrl"] + i["reward_contact"] + i["reward_survive"] for i in infos]))
    np.testing.assert_allclose(np.asarray(ANT_DIR.reward(th, feats)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("family", list(FAMILIES.values()), ids=list(FAMILIES))
def test_samplers_stay_in_range(family):
    for split, (lo, hi) in (("train", family.train_range), ("test", family.test_range)):
        p = np.asarray(family.sample(jax.random.PRNGKey(3), 2000, split))
        assert p.shape == (2000,) and p.min() >= lo and p.max() <= hi
        assert p.max() - p.min() > 0.9 * (hi - lo)  # covers the range
    assert family.test_range[0] < family.train_range[0] and family.test_range[1] > family.train_range[1]


def test_rewards_vectorise_and_jit():
    feats, _, _ = rollout("Pendulum-v1", 30)
    params = np.array([-0.5, 0.0, 0.9])
    r = jax.jit(PENDULUM_ANGLE.rewards)(params, feats)
    assert r.shape == (3, 30)
    np.testing.assert_allclose(np.asarray(r[1]), np.asarray(PENDULUM_ANGLE.reward(0.0, feats)), rtol=1e-6)


def test_unknown_family():
    with pytest.raises(ValueError, match="unknown reward family 'cartpole'"):
        get_family("cartpole")
