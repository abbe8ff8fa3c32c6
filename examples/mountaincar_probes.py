"""Probe rewards for the MountainCar example: scored against Monte-Carlo truth, never trained on."""
import jax.numpy as jnp

PROBES = {
    "goal": lambda f: (f["next_obs"][:, 0] >= 0.45).astype(jnp.float32),  # the sparse goal alone
    "effort": lambda f: -jnp.sum(f["action"] ** 2, axis=-1),               # the action cost alone
    "height": lambda f: jnp.sin(3.0 * f["obs"][:, 0]),                     # the hill's height
    "speed-sq": lambda f: 100.0 * f["obs"][:, 1] ** 2,                     # kinetic energy
    "right-slope": lambda f: (f["obs"][:, 0] > -0.3).astype(jnp.float32),  # a region indicator
}
