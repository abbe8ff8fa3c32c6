"""Pendulum-Angle: swing the bar up to the angle ``theta0`` (paper, appendix "Reward Design").

    r(s, a | theta0) = -(wrap(th - theta0)^2 + 0.1 vel^2 + 0.001 clip(a, -2, 2)^2)

with th = atan2(s[1], s[0]) and vel = s[2] of the state *before* the step, as in Pendulum-v1,
whose own reward is the member theta0 = 0.
"""
import jax.numpy as jnp
import numpy as np

from resolvent.families.base import Features, RewardFamily, effort


def wrap(x):
    """Angle to [-pi, pi): ``(x + pi) mod 2pi - pi``."""
    return (x + jnp.pi) % (2 * jnp.pi) - jnp.pi


def pendulum_angle_reward(theta0, features: Features):
    obs, action = features["obs"], features["action"]          # (n,3) (n,1)
    th = jnp.arctan2(obs[:, 1], obs[:, 0])                      # (n,)
    vel = obs[:, 2]                                             # (n,)
    u = jnp.clip(action[:, 0], -2.0, 2.0)                       # (n,)
    return -(wrap(th - theta0) ** 2 + 0.1 * vel**2 + 0.001 * u**2)


def _angle(f):
    return jnp.arctan2(f["obs"][:, 1], f["obs"][:, 0])


PROBES = {
    "upright-region": lambda f: (f["obs"][:, 0] > 0.9).astype(jnp.float32),        # indicator
    "height": lambda f: f["obs"][:, 0],                                              # cos theta
    "velocity-sq": lambda f: -f["obs"][:, 2] ** 2,                                   # quadratic
    "effort": effort,                                                               # action
    "power": lambda f: f["obs"][:, 2] * jnp.clip(f["action"][:, 0], -2, 2),         # product
    "side-bump": lambda f: jnp.exp(-((_angle(f) - 1.0) ** 2) / 0.2),                 # local bump
    "mixture": lambda f: 0.5 * f["obs"][:, 0] - 0.1 * jnp.abs(f["obs"][:, 2]) + 0.2 * f["obs"][:, 1],
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],                  # rate of change
    "angle-rate": lambda f: (jnp.arctan2(f["next_obs"][:, 1], f["next_obs"][:, 0]) - _angle(f) + jnp.pi)
    % (2 * jnp.pi) - jnp.pi,                                                         # the step's turn
}


PENDULUM_ANGLE = RewardFamily(
    name="pendulum-angle", env_id="Pendulum-v1", param_name="theta0",
    reward=pendulum_angle_reward,
    train_range=(-0.4 * np.pi, 0.4 * np.pi), test_range=(-0.6 * np.pi, 0.6 * np.pi),
    original_param=0.0, extras=(), dataset_size=20_000, sigma=0.3, td3_steps=20_000,
    probes=PROBES,
)
