"""The config tree's shared parts: the TD hyper-parameters, and config dataclasses to and from
plain dicts (a run's ``config.json``, a model's metadata).

``TDConfig`` (gamma, lr, tau, batch_size) is declared once here; every temporal-difference
learner's config (operator FQE, DQN, BCQ) and the optimize experiment's inherit it.

``to_dict(config)`` is the nested dict of a config dataclass (``dataclasses.asdict``).
``from_dict(cls, d)`` builds it back from what ``to_dict`` wrote or a json file holds, field
by field from the class's own annotations:

- a nested config dataclass (or ``X | None``) from its dict, recursively;
- a tuple, at any depth (``tuple[tuple[float, ...], ...]``), from json's lists;
- any other value as it is (the dataclass's ``__post_init__`` checks it).

An unknown key is one ``ValueError`` naming the keys, the config and the keys it knows.
``narrow(cls, config)`` builds a smaller config from the fields a larger one shares with it.
A leaf module: it imports nothing of resolvent, so every layer may use it.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

C = TypeVar("C")


@dataclass(frozen=True)
class TDConfig:
    """What every temporal-difference learner here shares (the paper's values, where it gives them)."""

    gamma: float = 0.99          # discount factor (the paper does not state it; 0.99 is usual)
    lr: float = 1e-3             # Adam learning rate
    tau: float = 0.005           # Polyak rate alpha of the target networks
    batch_size: int = 256        # transitions per step

    def __post_init__(self):
        if not 0 < self.gamma < 1:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")
        if not 0 < self.lr < float("inf"):
            raise ValueError(f"lr must be > 0 and finite (the learning rate), got {self.lr}")
        if not 0 < self.tau <= 1:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


def narrow(cls: type[C], config) -> C:
    """``cls`` built from the fields of the dataclass ``config`` that ``cls`` declares too (an
    experiment's config -> its algorithm's); the others keep ``cls``'s defaults."""
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    return cls(**{f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name in names})


def to_dict(config) -> dict:
    """The config dataclass as a nested dict (json-ready: tuples are written as lists)."""
    return dataclasses.asdict(config)


def from_dict(cls: type[C], d: Mapping, what: str = "") -> C:
    """``cls`` built from the dict ``d`` (see the module's docstring); ``what`` names the config
    in the error for an unknown key (a nested config is named by its field)."""
    if not isinstance(d, Mapping):
        raise ValueError(f"{_name(what, cls)} must be a mapping of keys to values, got {type(d).__name__}")
    known = sorted(f.name for f in dataclasses.fields(cls) if f.init)
    unknown = sorted(set(d) - set(known))
    if unknown:
        words = " ".join(w for w in ("unknown", what, "config keys") if w)
        raise ValueError(f"{words} {unknown} in {cls.__name__}; known: {known}")
    hints = typing.get_type_hints(cls)
    return cls(**{k: _value(hints[k], v, f"{what}.{k}" if what else k) for k, v in d.items()})


def _name(what: str, cls: type) -> str:
    return f"the {what} config ({cls.__name__})" if what else cls.__name__


def _value(tp: Any, v: Any, what: str) -> Any:
    """The json value ``v`` as the annotated type ``tp`` wants it."""
    if v is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):          # X | None (or X | Y: the first that fits)
        options = [a for a in args if a is not type(None)]
        for a in options:
            if dataclasses.is_dataclass(a) and isinstance(v, Mapping):
                return from_dict(a, v, what)
        return _value(options[0], v, what) if len(options) == 1 else v
    if dataclasses.is_dataclass(tp) and isinstance(v, Mapping):
        return from_dict(tp, v, what)
    if (origin is tuple or tp is tuple) and isinstance(v, (list, tuple)):
        if len(args) == 2 and args[1] is Ellipsis:           # tuple[X, ...]
            return tuple(_value(args[0], x, what) for x in v)
        if args and len(args) == len(v):                     # tuple[X, Y]
            return tuple(_value(a, x, what) for a, x in zip(args, v))
        return tuple(v)
    return v
