"""The transition schema: the quantities a reward sees, built by one function.

Every reward in resolvent is a callable over a dict of per-transition quantities, one row per
transition: ``obs`` (n, ds), ``action`` (n, da), ``next_obs`` (n, ds) and scalar quantities
(n,) of the step: ``terminated``, the environment's own ``reward`` and the numeric entries of
the step's ``info`` (nested dicts joined with ``/``, vectors split into ``key[i]``). Datasets,
ground-truth rollouts, returns and the TD3 reward wrapper all take their scalars from
``step_quantities``, so a reward reads the same thing wherever it is evaluated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import jax.numpy as jnp
import numpy as np

CORE_KEYS = ("obs", "action", "next_obs")


@dataclass(frozen=True)
class Member:
    """One member ``r(. | param)`` of a parametric reward ``fn(param, features) -> (n,)``, called
    like any reward over the transition quantities. Every member shares ``fn``: where a reward is
    compiled (``rewards.probes``), ``fn`` is compiled once with the parameter as an argument and
    serves every member, so a member nobody asked before costs what the compiled reward costs."""

    fn: Callable          # fn(param, features) -> (n,): the family's reward, shared by its members
    param: float          # this member's parameter

    def __call__(self, features: Mapping) -> jnp.ndarray:
        return self.fn(jnp.float32(self.param), features)


def info_quantities(info: Mapping, per_step: bool = False) -> dict[str, np.ndarray]:
    """The numeric entries of an ``info`` dict as scalar quantities.

    ``per_step``: the values are arrays over steps (an episode's infos, leading axis = step);
    otherwise they are one step's values. Non-numeric entries are left out.
    """
    out: dict[str, np.ndarray] = {}

    def add(name: str, value) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                add(f"{name}/{k}" if name else str(k), v)
            return
        v = np.asarray(value)
        if v.dtype == object or not (np.issubdtype(v.dtype, np.number) or v.dtype == bool):
            return
        lead = 1 if per_step else 0
        if v.ndim == lead:
            out[name] = v.astype(np.float32)
        elif v.ndim == lead + 1:
            for i in range(v.shape[-1]):
                out[f"{name}[{i}]"] = v[..., i].astype(np.float32)

    add("", info)
    return out


def step_quantities(keys: tuple[str, ...], reward: float, terminated: bool, info: Mapping) -> dict[str, float]:
    """The scalar quantities ``keys`` of one environment step (``terminated``, ``reward`` or an
    entry of ``info``); ValueError naming a key the step does not give."""
    known = {"terminated": float(terminated), "reward": float(reward)}
    missing = [k for k in keys if k not in known]
    if missing:
        flat = info_quantities(info)
        known.update({k: float(v) for k, v in flat.items()})
        lost = [k for k in missing if k not in known]
        if lost:
            raise ValueError(f"the environment's steps do not give {lost}; its info holds {sorted(flat)}")
    return {k: known[k] for k in keys}
