"""Reward callables, checked: ``evaluate_reward`` (finite, one value per transition, or one
clear error naming the reward) and ``reads`` (which stored quantities a reward reads).

A reward is any callable over the stored transition quantities returning (n,) values: a
family's members, its out-of-family probe rewards (each family's file holds them, ``probes``),
the generic prior's draws and the user's own.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.transitions import Member

Reward = Callable[[Mapping[str, jax.Array]], jax.Array]


class Columns(Mapping):
    """Transition quantities, each made by ``make`` (a JAX array by default) when a reward first
    reads it: a reward over a long rollout reads two of its columns and copies only those. Kept in
    ``made`` (a caller's dict: a later reward at the same rows reads them without making them again)."""

    def __init__(self, features: Mapping, make: Callable = jnp.asarray, made: dict | None = None):
        self.features, self.make, self.converted = features, make, {} if made is None else made

    def __getitem__(self, key):
        if key not in self.converted:
            self.converted[key] = self.make(self.features[key])
        return self.converted[key]

    def __iter__(self):
        return iter(self.features)

    def __len__(self):
        return len(self.features)


def evaluate_reward(reward: Reward, features: Mapping, what: str, name: str = "reward callable",
                    compiled: bool | None = None, rows: int | None = None) -> jax.Array:
    """``reward(features)`` checked to be finite with one value per transition: (n,). ``compiled``:
    whether to compile the reward (``_call``; None: from ``COMPILE_ROWS`` rows), so the chunks of
    one long batch run the way the whole would. ``rows``: n where the caller knows it (a ``Columns``
    then makes only what the reward reads; None: the first quantity's length)."""
    n = len(next(iter(features.values()))) if rows is None else rows
    try:
        compile_it = n >= COMPILE_ROWS if compiled is None else compiled
        values = _call(reward, features, compile_it or (isinstance(reward, Member) and n >= MEMBER_ROWS))
        if not (isinstance(values, jax.Array) and values.dtype == jnp.float32):   # a compiled member's already is
            values = jnp.asarray(values, jnp.float32)
    except KeyError as e:
        raise ValueError(f"{name} asked for {e}, not among the quantities of the {what}; "
                         f"available: {sorted(features)}") from None
    except Exception as e:  # noqa: BLE001 - the user's code: name it and what it raised
        raise ValueError(f"{name} failed on the {what}: {type(e).__name__}: {e}") from None
    if values.shape != (n,):
        raise ValueError(f"{name} returned shape {tuple(values.shape)} on the {what} ({n} transitions); "
                         f"expected ({n},), one value per transition")
    if not bool(jnp.all(jnp.isfinite(values))):
        unknown = sorted(k for k, v in features.items()
                         if np.issubdtype(np.asarray(v).dtype, np.floating) and np.isnan(np.asarray(v)).any())
        hint = (f" (at some of them {unknown} are unknown, NaN: those points carry the target policy's "
                f"action, so a reward may read only {sorted(set(features) - set(unknown))})") if unknown else ""
        raise ValueError(f"{name} returned non-finite values on the {what}{hint}")
    return values


COMPILE_ROWS = 1 << 22   # rows from which a reward is compiled, its elementwise operations fused: a new reward's
#                          first call along the bank's 2.5e6 states is faster as written (56 against 82 ms with
#                          its compile); along G_400's 2e7 the two are even, 5 of 10 rewards faster compiled
#                          (results/answer-times/compile-rows.txt)


MEMBER_ROWS = 1 << 15     # rows from which a family's member (``transitions.Member``) is compiled: its family's
#                           function, compiled once per shape for every member (a new member of Pendulum-Angle at
#                           the 1.75e6 distinct steps of G_400 at 1e4 points: 7.9 ms against 18-22 ms as written)


def _call(reward: Reward, features: Mapping, compiled: bool):
    """``reward`` over ``features``: as written (one JAX operation at a time), or ``compiled`` (on
    a long rollout's 400 x 5 x 1e4 model states) over the quantities it reads, so its elementwise
    chain runs as one loop instead of a pass over memory per operation; a family's member as its
    family's function compiled once, its parameter an argument (``_family``). A reward JAX cannot
    compile (Python branches on values, numpy calls) runs as written; its own errors surface there."""
    if compiled:
        member = isinstance(reward, Member)
        keys = _read_keys(reward, features, reward.fn if member else reward)
        try:
            if member:
                return _family(reward.fn)(np.float32(reward.param), {k: features[k] for k in keys})
            return jax.jit(reward)({k: features[k] for k in keys})
        except Exception:  # noqa: BLE001 - not traceable: run as written below, where its errors are named
            pass
    return reward(Columns(features))


_FAMILY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # a family's fn -> fn compiled, param an argument


def _family(fn: Callable) -> Callable:
    """``fn(param, features)`` compiled once for every member of its family (a weakly kept cache)."""
    if fn not in _FAMILY:
        _FAMILY[fn] = jax.jit(fn)
    return _FAMILY[fn]


_READ: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # owner -> {its inputs' keys: the keys it reads}


def _read_keys(reward: Reward, features: Mapping, owner: Callable) -> set:
    """``reads``, kept per ``owner`` (the reward itself, or a member's family function, for all
    its members) and set of available keys: the chunks of one long rollout (and every later
    evaluation of the same reward) trace the reward on two rows once, not per chunk."""
    have = frozenset(features)
    try:
        known = _READ.setdefault(owner, {})
    except TypeError:                      # a callable that cannot be weakly referenced: traced each time
        return reads(reward, features)
    if have not in known:
        known[have] = reads(reward, features)
    return known[have]


class _Reads(Mapping):
    """The first two rows of every quantity, taken when a reward reads it; records which it reads."""

    def __init__(self, features: Mapping):
        self.features, self.read = features, set()

    def __getitem__(self, key):
        value = jnp.asarray(np.asarray(self.features[key])[:2])
        self.read.add(key)
        return value

    def __iter__(self):
        return iter(self.features)

    def __len__(self):
        return len(self.features)


def reads(reward: Reward, features: Mapping) -> set:
    """The keys of ``features`` that ``reward`` reads (all of them if it fails on two rows); only
    those are taken from ``features`` (a ``Mapping`` may make a quantity when it is read)."""
    probe = _Reads(features)
    try:
        reward(probe)
    except Exception:  # noqa: BLE001 - evaluate_reward reports the reward's own error where it is used
        return set(features)
    return probe.read
