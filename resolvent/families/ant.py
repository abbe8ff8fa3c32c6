"""Ant-Dir: move in the direction ``theta`` (paper appendix; Rakelly et al.'s PEARL code).

    r(s, a | theta) = vx cos(theta) + vy sin(theta) - 0.5 ||a||^2
                      - 5e-4 ||s'[27:105]||^2 + (1 - terminated)

vx, vy are ``info["x_velocity"]``, ``info["y_velocity"]`` of Ant-v5; the contact forces are
the clipped ``cfrc_ext`` part of the next observation. theta = 0 is Ant-v5's own reward.
"""
import math

import jax.numpy as jnp

from resolvent.families.base import Features, RewardFamily, effort


def ant_dir_reward(theta, features: Features):
    vx, vy = features["x_velocity"], features["y_velocity"]    # (n,) (n,)
    a = features["action"]                                      # (n,8)
    contact = features["next_obs"][:, 27:105]                   # (n,78)
    alive = 1.0 - features["terminated"].astype(jnp.float32)    # (n,)
    return (vx * jnp.cos(theta) + vy * jnp.sin(theta) - 0.5 * jnp.sum(a**2, axis=-1)
            - 5e-4 * jnp.sum(contact**2, axis=-1) + alive)


PROBES = {
    "upright-region": lambda f: (f["obs"][:, 0] > 0.55).astype(jnp.float32),       # torso height band
    "height": lambda f: f["obs"][:, 0],
    "lateral-speed-sq": lambda f: -f["y_velocity"] ** 2,                              # quadratic
    "effort": effort,
    "speed": lambda f: jnp.sqrt(f["x_velocity"] ** 2 + f["y_velocity"] ** 2),
    "yaw-rate-x-velocity": lambda f: f["obs"][:, 18] * f["x_velocity"],             # product
    "mixture": lambda f: f["y_velocity"] - 0.5 * f["obs"][:, 0] + 0.25 * effort(f),
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],                  # rate of change
}


ANT_DIR = RewardFamily(
    name="ant-dir", env_id="Ant-v5", param_name="theta",
    reward=ant_dir_reward, train_range=(-math.pi / 4, math.pi / 4),
    test_range=(-math.pi / 3, math.pi / 3), original_param=0.0,
    extras=("x_velocity", "y_velocity", "terminated"), dataset_size=200_000, sigma=0.1,
    td3_steps=300_000, replay_source="snapshots",
    probes=PROBES,
)
