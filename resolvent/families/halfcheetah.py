"""HalfCheetah-Vel: run forward at ``v_target`` (paper appendix; Rakelly et al.'s PEARL code).

    r(s, a | v_target) = -|v - v_target| - 0.05 ||a||^2

with v = ``info["x_velocity"]`` of HalfCheetah-v5 (a finite difference of positions, not in
the observation, so it is stored with every transition).
"""
import jax.numpy as jnp

from resolvent.families.base import Features, RewardFamily, effort


def halfcheetah_vel_reward(v_target, features: Features):
    v = features["x_velocity"]                                  # (n,)
    a = features["action"]                                      # (n,6)
    return -jnp.abs(v - v_target) - 0.05 * jnp.sum(a**2, axis=-1)


PROBES = {
    "speed-band": lambda f: ((f["x_velocity"] > 0.5) & (f["x_velocity"] < 1.5)).astype(jnp.float32),
    "forward-velocity": lambda f: f["x_velocity"],
    "pitch-sq": lambda f: -f["obs"][:, 1] ** 2,                                      # quadratic
    "effort": effort,
    "height": lambda f: f["obs"][:, 0],                                              # root z
    "velocity-x-height": lambda f: f["x_velocity"] * f["obs"][:, 0],                 # product
    "run-fast": lambda f: f["x_velocity"] + 0.1 * effort(f),                       # HalfCheetah-v5's own
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],                  # rate of change
    "pitch-rate": lambda f: f["next_obs"][:, 1] - f["obs"][:, 1],
}


HALFCHEETAH_VEL = RewardFamily(
    name="halfcheetah-vel", env_id="HalfCheetah-v5", param_name="v_target",
    reward=halfcheetah_vel_reward, train_range=(0.7, 1.3), test_range=(0.6, 1.4),
    original_param=1.0, extras=("x_velocity",), dataset_size=100_000, sigma=0.1,
    td3_steps=200_000, replay_source="snapshots",
    probes=PROBES,
)
