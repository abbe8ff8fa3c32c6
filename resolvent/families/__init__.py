"""Reward families of the paper: Pendulum-Angle, HalfCheetah-Vel, Ant-Dir."""
from resolvent.families.ant import ANT_DIR
from resolvent.families.base import CORE_KEYS, Features, RewardFamily
from resolvent.families.halfcheetah import HALFCHEETAH_VEL
from resolvent.families.pendulum import PENDULUM_ANGLE, wrap

FAMILIES: dict[str, RewardFamily] = {f.name: f for f in (PENDULUM_ANGLE, HALFCHEETAH_VEL, ANT_DIR)}


def get_family(name: str) -> RewardFamily:
    """The family called ``name``; ValueError listing the known ones otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"unknown reward family {name!r}; known: {sorted(FAMILIES)}") from None


__all__ = ["ANT_DIR", "CORE_KEYS", "FAMILIES", "Features", "HALFCHEETAH_VEL", "PENDULUM_ANGLE",
           "RewardFamily", "get_family", "wrap"]
