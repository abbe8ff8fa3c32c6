"""A reward family: a parametric set of rewards over stored transition quantities.

Every member ``r(. | p)`` is a pure, vectorised, jit-able function of a *features* dict
holding, for each transition, at least ``obs`` (n, ds), ``action`` (n, da), ``next_obs``
(n, ds) and the family's extra quantities (``extras``, each (n,)). Rewards can therefore be
evaluated on the whole dataset and on the reference points without the simulator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import jax
import jax.numpy as jnp

from resolvent.transitions import CORE_KEYS, Member

Features = Mapping[str, jax.Array]
RewardFn = Callable[[jax.Array, Features], jax.Array]
Reward = Callable[[Features], jax.Array]


def effort(f: Features) -> jax.Array:
    """Action effort, -||a||^2: a probe every family has."""
    return -jnp.sum(f["action"] ** 2, axis=-1)


@dataclass(frozen=True)
class RewardFamily:
    """A named family of rewards ``reward(param, features) -> (n,)`` with train/test ranges."""

    name: str                                 # CLI name, e.g. "pendulum-angle"
    env_id: str                               # Gymnasium id of the base environment
    param_name: str                           # name of the scalar parameter, e.g. "theta0"
    reward: RewardFn                          # r(param, features) -> (n,)
    train_range: tuple[float, float]          # training rewards: param ~ U[train_range]
    test_range: tuple[float, float]           # test rewards: param ~ U[test_range]
    original_param: float                     # param whose reward is the base env's own task
    extras: tuple[str, ...] = ()              # per-transition info keys stored besides s, a, s'
    dataset_size: int = 20_000                # the paper's dataset size
    sigma: float = 0.3                        # behaviour noise, relative to the action bound
    td3_steps: int = 20_000                   # TD3 steps for the shipped target policy
    replay_source: str = "buffer"             # "buffer": the TD3 replay buffer ships as is;
    # "snapshots": too large to ship, it is regenerated from actor snapshots along the TD3 run
    probes: Mapping[str, Reward] = field(default_factory=dict, hash=False)  # out-of-family rewards, scored
    #                                                  only: how well an operator answers rewards nobody trained on

    def probe_rewards(self) -> dict[str, Reward]:
        """The probes (name -> callable): at least six of different kinds (a region indicator, a
        quadratic, action effort, a height or velocity, products and mixtures, and the rate of
        change of a state quantity, read from ``next_obs``, decided by the first steps' transient)."""
        return dict(self.probes)

    @property
    def feature_keys(self) -> tuple[str, ...]:
        return CORE_KEYS + self.extras

    def rewards(self, params: jax.Array, features: Features) -> jax.Array:
        """All rewards of ``params`` (R,) on ``features``: (R, n)."""
        return jax.vmap(self.reward, in_axes=(0, None))(jnp.asarray(params, jnp.float32), features)

    def sample(self, key: jax.Array, n: int, split: str) -> jax.Array:
        """``n`` parameters drawn uniformly from the ``split`` ("train" or "test") range."""
        lo, hi = {"train": self.train_range, "test": self.test_range}[split]
        return jax.random.uniform(key, (n,), minval=lo, maxval=hi)

    def reward_callable(self, param: float) -> Member:
        """The member ``r(. | param)`` as a one-argument callable over features (its function
        shared with the family's other members: compiled once for all of them)."""
        return Member(self.reward, float(param))
