"""Random keys derived from stable names (method, seed, purpose), never from positions."""
from __future__ import annotations

import zlib

import jax


def name_id(name: str) -> int:
    """A stable non-negative integer for a name, to fold into PRNG keys."""
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def named_key(seed: int, *names: str) -> jax.Array:
    """A PRNG key derived from the experiment seed and stable names (never positions)."""
    key = jax.random.PRNGKey(seed)
    for name in names:
        key = jax.random.fold_in(key, name_id(name))
    return key
