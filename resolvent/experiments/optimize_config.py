"""The optimize experiment's configuration: ``OptimizeConfig`` and the constants that name its
choices (critic operators, algorithms).

A light module (no gymnasium, matplotlib or the experiments' runners): the command line builds
its ``optimize`` options from these fields at once.
"""
from __future__ import annotations

from dataclasses import dataclass

from resolvent.algorithms import bcq
from resolvent.config import TDConfig, from_dict, to_dict
from resolvent.data import check_kind
from resolvent.families import get_family
from resolvent.operators import MaxOutOperator

METHODS = ("maxout", "vanilla")
ALGORITHMS = ("auto", "dqn", "bcq")


@dataclass(frozen=True)
class OptimizeConfig(TDConfig):
    """An offline-policy-optimisation experiment (the paper's hyper-parameters, else BCQ's): the
    TD ones (gamma, lr, tau, batch_size) shared by both algorithms, and these. The algorithm's
    own config takes the fields it shares with this one (``config.narrow``)."""

    family: str = "pendulum-angle"     # reward family
    dataset: str = "expert"            # dataset kind: replay, expert or medium
    methods: tuple[str, ...] = METHODS  # critic operator networks: maxout, vanilla
    algorithm: str = "auto"            # dqn, bcq, or auto: dqn for one action dimension
    seeds: int = 3                     # network seeds, trained at once (vmapped)
    seed: int = 0                      # experiment seed: rewards, reference points, networks
    data_seed: int = 0                 # seed of the dataset's behaviour rollouts
    steps: int = 15_000                # training steps per method
    eval_every: int = 1_000            # steps between evaluations in the environment
    checkpoint_every: int = 5_000      # steps between checkpoints (a multiple of eval_every)
    eval_episodes: int = 5             # episodes per policy and reward at each evaluation
    n_return_rewards: int = 3          # test rewards whose returns are logged
    m: int = 128                       # reference points
    n_train_rewards: int = 32          # training rewards
    train_params: tuple[float, ...] = ()  # fixed training rewards' parameters instead of
    # n_train_rewards sampled ones: (theta,) trains for one reward alone (single-reward baseline)
    hidden: tuple[int, ...] = (256, 256)  # hidden layers of the operator networks
    features: int = 64                 # output features of f, g (per max-out copy), DeepONet
    heads: int = MaxOutOperator.heads  # max-out copies K
    n_actions: int = 11                # DQN: grid actions per action dimension
    double: bool = False               # DQN: Double DQN target (online argmax, target value)
    phi: float = bcq.BCQConfig.phi     # BCQ: largest perturbation (fraction of the bound)
    lmbda: float = bcq.BCQConfig.lmbda  # BCQ: clipped double-Q weight
    n_samples: int = bcq.BCQConfig.n_samples  # BCQ: VAE samples per next state in the target
    eval_samples: int = bcq.BCQConfig.eval_samples  # BCQ: VAE samples per state when acting
    vae_hidden: tuple[int, ...] = (750, 750)     # BCQ: VAE encoder and decoder
    actor_hidden: tuple[int, ...] = (400, 300)   # BCQ: perturbation operator's MLPs

    def __post_init__(self):
        super().__post_init__()
        get_family(self.family)
        check_kind(self.dataset)
        if not self.methods:
            raise ValueError("no method given")
        for m in self.methods:
            if m not in METHODS:
                raise ValueError(f"unknown method {m!r} for optimize; known: {list(METHODS)}")
        dup = sorted({m for m in self.methods if self.methods.count(m) > 1})
        if dup:
            raise ValueError(f"methods listed twice: {dup}")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; known: {list(ALGORITHMS)}")
        for name in ("seeds", "steps", "eval_every", "checkpoint_every", "eval_episodes", "m",
                     "n_train_rewards", "heads", "n_samples", "eval_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_return_rewards < 0:
            raise ValueError(f"n_return_rewards must be >= 0, got {self.n_return_rewards}")
        if self.n_actions < 2:
            raise ValueError(f"n_actions must be >= 2, got {self.n_actions}")
        if self.checkpoint_every % self.eval_every:
            raise ValueError("checkpoint_every must be a multiple of eval_every")
        if self.steps % self.eval_every:
            raise ValueError(f"steps ({self.steps}) must be a multiple of eval_every ({self.eval_every})")
        for name in ("seed", "data_seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    def inert_fields(self) -> tuple[str, ...]:
        """Fields none of this run's methods reads (``EvaluateConfig.inert_fields``): none here."""
        return ()

    @classmethod
    def from_dict(cls, d: dict) -> "OptimizeConfig":
        if d.get("task", "optimize") != "optimize":
            raise ValueError(f"this is a {d['task']!r} run, not an optimize run")
        return from_dict(cls, {k: v for k, v in d.items() if k != "task"})

    def to_dict(self) -> dict:
        return {"task": "optimize", **to_dict(self)}
