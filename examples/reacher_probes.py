"""Probe rewards for the Reacher example: scored against Monte-Carlo truth, never trained on."""
import jax.numpy as jnp

PROBES = {
    "distance": lambda f: f["reward_dist"],                                   # an info entry
    "near-target": lambda f: (f["reward_dist"] > -0.05).astype(jnp.float32),  # a region indicator
    "effort": lambda f: f["reward_ctrl"],                                     # another info entry
    "joint-speed-sq": lambda f: -jnp.sum(f["obs"][:, 6:8] ** 2, axis=-1),     # a quadratic of obs
    "elbow-bent": lambda f: f["obs"][:, 3] ** 2,                              # sin(q2)^2
}
