"""Probe rewards for the noisy HalfCheetah example: scored against Monte-Carlo truth, never
trained on except the dataset's own reward (the first, which the operators see as their given reward)."""
import jax.numpy as jnp


def effort(f):
    return -jnp.sum(f["action"] ** 2, axis=-1)


PROBES = {
    "own-reward": lambda f: f["reward"],                                        # HalfCheetah-v5's own
    "effort": effort,                                                           # the action cost alone
    "speed-2": lambda f: -jnp.abs(f["x_velocity"] - 2.0) + 0.05 * effort(f),    # another speed
    "backwards": lambda f: -f["x_velocity"],                                    # the other direction
    "height": lambda f: f["obs"][:, 0],                                         # posture: root z
    "pitch-sq": lambda f: -f["obs"][:, 1] ** 2,                                 # posture: body angle
    "height-rate": lambda f: f["next_obs"][:, 0] - f["obs"][:, 0],              # a rate of change
}
