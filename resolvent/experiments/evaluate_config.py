"""The evaluate experiment's configuration: ``EvaluateConfig``, its presets and the constants
that name its choices (methods, reference actions, trust report).

A light module (no matplotlib, minari or the experiments' runners): the command line builds
its ``evaluate`` options from these fields at once.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from resolvent.algorithms import FQEConfig
from resolvent.algorithms.bank import AUTO_POINTS, BankConfig
from resolvent.algorithms.distil import DistilConfig
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.algorithms.onestep import check as check_onestep
from resolvent.config import from_dict, to_dict
from resolvent.data import check_kind
from resolvent.evaluation import PointsConfig
from resolvent.evaluation.points import KINDS as POINT_KINDS
from resolvent.evaluation.support import SupportConfig
from resolvent.families import get_family
from resolvent.operators import NETWORKS
from resolvent.rewards import PriorConfig

OPERATORS = ("attention", "linear", "vanilla", "sf")
METHODS = tuple(k for k, v in NETWORKS.items() if not v.control)   # every evaluation network, fqe included
DEFAULT_METHODS = ("favor", "fb", "sf", "attention")   # the default preset's: rewards under pi first
AUTO_CANDIDATES = ("favor", "fb", "sf", "attention")   # method="auto" trains these, keeps the best held-out
REF_ACTIONS = ("data", "half-policy")
TRUST = ("auto", "on", "off")   # the trust report: auto is on for a dataset of one's own and for method auto
ABSORBING = ("auto", "on", "off")   # attention's absorbing-state slot
ORACLE_REWARDS = ("test", "probe")   # the reward set method fqe (the per-reward oracle) is trained on
TERMINAL_CHOICES = ("auto", "none", "callable")   # the termination rule besides a MODULE:ATTR: the registered one,
#                                                  none, or a callable given to resolvent.fit (not saved)
ORACLES = ("run", "dope")   # the oracle's recipe: the run's FQE config, or DOPE's (algorithms/fqe.py: dope)


def default_fqe() -> FQEConfig:
    """Operator FQE as measured best here (``results/README.md``, the ablation): Polyak rate
    0.05, the learning rate cosine-decayed over the run, the family's rewards and 256 generic
    ones at every step."""
    return FQEConfig(tau=0.05, lr_schedule="cosine", prior=PriorConfig(kind="mix", n_generic=256))


def paper_fqe() -> FQEConfig:
    """The paper's configuration: Polyak rate 0.005, the family's rewards alone."""
    return FQEConfig(tau=0.005, prior=PriorConfig(kind="family"))


PRESETS = {"default": default_fqe, "paper": paper_fqe}
PRESET_METHODS = {"default": DEFAULT_METHODS, "paper": OPERATORS}   # the paper's four networks, exactly


@dataclass(frozen=True)
class EvaluateConfig:
    """An offline-policy-evaluation experiment (``preset("paper")``: the paper's settings)."""

    family: str | None = "pendulum-angle"  # reward family (None: a dataset of one's own, ``data``)
    dataset: str = "expert"            # the family's dataset kind: replay, expert or medium
    data: str | None = None            # instead of a family: a Minari dataset id
    policy: str | None = None          # with ``data``: the target policy, MODULE:ATTR or FILE.py:ATTR
    env: str | None = None             # with ``data``: the environment for ground truth [the dataset's]; "none"
    probes: str | None = None          # with ``data``: a Python file defining PROBES = {name: reward}
    terminal: str = "auto"             # the environment's termination rule, 1 where a transition (obs, action,
    #                                    next_obs) ends, which the one-step model ends by: MODULE:ATTR, none, auto
    #                                    (with ``data``: resolvent/endings.py's for its environment, where the data's
    #                                    flag agrees with it; a family: none, as its grids were measured), or
    #                                    callable (one given to resolvent.fit)
    methods: tuple[str, ...] = DEFAULT_METHODS  # networks (and the fqe oracle) to train; "auto":
    #                                    AUTO_CANDIDATES, keeping the one the trust report favours
    seeds: int = 3                     # network seeds, trained at once (vmapped)
    seed: int = 0                      # experiment seed: rewards, reference points, networks
    data_seed: int = 0                 # seed of the dataset's behaviour rollouts
    steps: int = 15_000                # training steps per method
    log_every: int = 500               # steps between metric rows
    checkpoint_every: int = 2_500      # steps between checkpoints (a multiple of log_every)
    m: int = 128                       # reference points
    ref_sampling: str = "uniform"      # reference points: uniform (the paper's) or cover
    ref_actions: str = "data"          # actions at the reference points: data (the paper's), or
    #                                    half-policy: the target policy's at every other one
    n_train_rewards: int = 32          # the family's training rewards, all fed at every step
    n_test_rewards: int = 16           # unseen test rewards (wider range)
    n_initial: int = 64                # ground-truth initial points y_i = (s0, a0) (reset points)
    eval_points: tuple[str, ...] = POINT_KINDS  # evaluation point kinds: reset (the paper's),
    #                                    trajectory (along pi's own), dataset (its states restored)
    n_points: int = 64                 # points of each kind other than reset
    traj_max_steps: int = 200          # trajectory points: pi runs U{0..traj_max_steps} steps first
    trust: str = "auto"                # trust report (held-out rewards against per-reward FQE):
    #                                    on, off, or auto (on for a dataset of one's own and for auto)
    trust_rewards: int = 8             # held-out generic rewards of the trust report
    trust_family_rewards: int = 0      # a family's first training rewards added to the trust report's
    #                                    (a dataset of one's own: its given rewards always are)
    trust_points: int = 512            # dataset transitions where it compares the answers
    auto: bool = False                 # set by "auto" in methods: keep the best of AUTO_CANDIDATES
    auto_tie: float = 1.5              # auto: candidates within this fraction over the best held-out
    #                                    agreement or Bellman residual are tied; the longest expansion is kept,
    #                                    or a tied kauto that agrees better
    oracle_rewards: str = "test"       # the rewards method fqe (the per-reward oracle) is trained on
    #                                    and answers: test (the training ones when there are none), or probe
    oracle: str = "run"                # the oracle's recipe: run (the fqe config's lr, tau, batch), or dope (DOPE's
    #                                    AdamW 3e-4, Polyak 0.005, output scaled by 1 / (1 - gamma), clipped targets)
    gt_tol: float = 1e-5               # rollouts run until gamma^t < gt_tol
    fqe: FQEConfig = field(default_factory=default_fqe)  # operator FQE and its reward prior
    hidden: tuple[int, ...] = (256, 256)  # hidden layers of every MLP
    features: int = 64                 # output features of f, g (attention, linear, vanilla)
    sf_ridge: float = 1e-3             # ridge of the SF weight regression
    sf_fit_points: int = 8192          # dataset transitions used for that regression
    sf_generic_basis: int = 96         # generic rewards added to SF's basis under a generic prior
    absorbing: str = "auto"            # attention's absorbing-state slot: on, off, or auto (on for a
    #                                    dataset of one's own whose episodes terminate)
    n_refs: int = 256                  # policy encoding: fresh reference states per training step
    ref_pool: int = 20_000             # policy encoding: reference states a reward is encoded over
    random_features: int = 256         # favor: positive random features M
    kernel_heads: int = 4              # favor, pi-attention: kernels in the occupancy's mixture H
    fb_ortho: float = 1.0              # fb: weight of B's orthonormality loss
    onestep: OneStepConfig = field(default_factory=OneStepConfig)  # the one-step model (policy encoding)
    horizons: tuple[int, ...] = (10, 30, 60, 150, 400)  # model-based expansions G_k scored after training (a
    #                                    ``METHOD+kK`` entry each, and auto's candidates; needs the one-step model)
    stretches: int = 256               # stretches of the data (max(horizons) steps each) along which a one-step
    #                                    model of one kept member is checked for ``METHOD+kauto``, the horizon chosen
    #                                    per reward (0: none; an ensemble's own spread under pi is its check)
    distil: DistilConfig = field(default_factory=DistilConfig)  # ``METHOD+dK``: the expansion G_K distilled
    #                                    into each operator of the policy encoding (distil.horizon = K; 0: none),
    #                                    and ``METHOD+dK+kk`` for each k of horizons: G_k with it as the tail
    bank: BankConfig = field(default_factory=lambda: BankConfig(points=AUTO_POINTS))  # ``METHOD+bK+kk``: the
    #                                    data's bank, bank.points states rolled out bank.horizon = K steps once,
    #                                    after training, the tail of G_k for each k of horizons: new points without
    #                                    a K-step rollout (0: none; -1: 2048 states under auto, whose pick it may
    #                                    replace: trust.with_bank; else none)
    support: SupportConfig = field(default_factory=SupportConfig)  # the action-support check saved with the run:
    #                                    where pi's action is far from every action the data took near a point
    #                                    (``resolvent q`` marks those points; results.json's ``support``)

    def __post_init__(self):
        if "auto" in self.methods:   # normalised here, so config.json holds the methods trained
            rest = tuple(m for m in self.methods if m != "auto" and m not in AUTO_CANDIDATES)
            object.__setattr__(self, "methods", AUTO_CANDIDATES + rest)
            object.__setattr__(self, "auto", True)
        if self.data is None:
            get_family(self.family)
            check_kind(self.dataset)
            own = [k for k in ("policy", "env", "probes") if getattr(self, k) is not None]
            if own:
                raise ValueError(f"{own} go with a dataset of one's own (data=...), not a family")
        elif self.family is not None:
            raise ValueError(f"give a reward family ({self.family!r}) or a dataset ({self.data!r}), not both")
        elif self.dataset != "expert":
            raise ValueError(f"dataset ({self.dataset!r}) names a family's dataset kind; with data={self.data!r} "
                             f"leave it out (--dataset goes with a FAMILY)")
        elif self.ref_actions == "half-policy":
            raise ValueError("ref_actions half-policy needs rewards of (obs, action) alone; a dataset of one's "
                             "own trains on its stored reward, which the policy's actions do not have: "
                             "use ref_actions data")
        if not self.methods:
            raise ValueError("no method given")
        for m in self.methods:
            if m not in METHODS:
                hint = " (a control network: use `resolvent optimize`)" if m in NETWORKS else ""
                raise ValueError(f"unknown method {m!r} for evaluation{hint}; known: {list(METHODS)}")
        dup = sorted({m for m in self.methods if self.methods.count(m) > 1})
        if dup:
            raise ValueError(f"methods listed twice: {dup}")
        for name in ("seeds", "steps", "log_every", "checkpoint_every", "m", "n_train_rewards",
                     "n_test_rewards", "n_initial", "sf_fit_points", "n_refs", "ref_pool", "random_features",
                     "kernel_heads", "seed", "data_seed", "features"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{name} must be an integer, got {v!r}")
            if v < (0 if name in ("seed", "data_seed") else 1):
                raise ValueError(f"{name} must be >= {0 if name in ('seed', 'data_seed') else 1}, got {v}")
        if self.distil.kernel_heads % self.kernel_heads:
            raise ValueError(f"distil.kernel_heads ({self.distil.kernel_heads}) widens the kernel operators' "
                             f"{self.kernel_heads} kernels (kernel_heads): give a multiple of {self.kernel_heads}, "
                             f"or 0 to keep them")
        if not 0 < self.gt_tol < 1:
            raise ValueError(f"gt_tol must be in (0, 1), got {self.gt_tol}")
        if self.checkpoint_every % self.log_every:
            raise ValueError("checkpoint_every must be a multiple of log_every")
        if self.steps % self.log_every:
            raise ValueError(f"steps ({self.steps}) must be a multiple of log_every ({self.log_every})")
        if self.fqe.prior is None:
            raise ValueError("an evaluate run needs a reward prior (fqe.prior)")
        if self.absorbing not in ABSORBING:
            raise ValueError(f"absorbing must be auto, on or off, got {self.absorbing!r}")
        if self.ref_actions not in REF_ACTIONS:
            raise ValueError(f"unknown ref_actions {self.ref_actions!r}; known: {list(REF_ACTIONS)}")
        if not isinstance(self.terminal, str) or (self.terminal not in TERMINAL_CHOICES and ":" not in self.terminal):
            raise ValueError(f"terminal must be auto, none, callable or a rule's MODULE:ATTR, got {self.terminal!r}")
        if self.trust not in TRUST:
            raise ValueError(f"trust must be auto, on or off, got {self.trust!r}")
        if not 0 <= self.auto_tie < float("inf"):
            raise ValueError(f"auto_tie must be a fraction >= 0, got {self.auto_tie}")
        if self.oracle not in ORACLES:
            raise ValueError(f"oracle must be one of {list(ORACLES)}, got {self.oracle!r}")
        if self.oracle_rewards not in ORACLE_REWARDS:
            raise ValueError(f"oracle_rewards must be one of {list(ORACLE_REWARDS)}, got {self.oracle_rewards!r}")
        if self.auto and self.trust == "off":
            raise ValueError("method auto chooses by the trust report: trust cannot be off")
        if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in self.horizons):
            raise ValueError(f"horizons must be integers >= 1 (model steps before the operator), got {self.horizons}")
        check_onestep(self.onestep)
        banked = self.bank.points > 0 or (self.bank.points == AUTO_POINTS and self.auto)
        if self.onestep.noise and banked and self.bank.reach:
            raise ValueError("onestep.noise: a noisy rollout's copies cannot each stop where the bank reaches; "
                             "set bank.reach 0 (the bank after the k steps asked) or bank.points 0 (no bank)")
        if self.stretches < 0:
            raise ValueError(f"stretches must be >= 0 (0: none, and no METHOD+kauto for a single one-step model), "
                             f"got {self.stretches}")
        for name in ("n_points", "trust_rewards", "trust_points"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.trust_family_rewards < 0:
            raise ValueError(f"trust_family_rewards must be >= 0, got {self.trust_family_rewards}")
        self.points_config()

    @property
    def trust_report(self) -> bool:
        """Whether the run holds out rewards and scores every method against per-reward FQE."""
        return self.trust == "on" or (self.trust == "auto" and (self.data is not None or self.auto))

    def points_config(self) -> PointsConfig:
        return PointsConfig(kinds=tuple(self.eval_points), n_reset=self.n_initial, n=self.n_points,
                            max_steps=self.traj_max_steps, gamma=self.gamma, tol=self.gt_tol, seed=self.data_seed)

    @property
    def prior(self) -> PriorConfig:
        return self.fqe.prior

    @property
    def gamma(self) -> float:
        return self.fqe.gamma

    def inert_fields(self) -> tuple[str, ...]:
        """Fields none of this run's methods reads: the one-step model, its expansions, their
        distillation and bank, without a method of the policy encoding (favor, fb, pi-attention);
        the bank's, where its default gives none (no auto); auto's band, without auto; the
        action-support check (a diagnostic of the answers, read by no method). A sweep
        counts two runs that differ only in these as the same run, so a default changed since does
        not orphan them."""
        policy = any(NETWORKS[m].encoding == "policy" for m in self.methods)
        no_bank = not self.auto and self.bank.points == AUTO_POINTS   # the default, resolved to none
        return ((() if policy else ("onestep", "horizons", "stretches", "distil", "bank"))
                + (("bank",) if policy and no_bank else ())
                + (() if self.auto else ("auto_tie",)) + ("support",))

    @classmethod
    def preset(cls, name: str, **overrides) -> "EvaluateConfig":
        """A named configuration (``default``: the best measured; ``paper``: the paper's)."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {sorted(PRESETS)}")
        return cls(**{"fqe": PRESETS[name](), "methods": PRESET_METHODS[name], **overrides})

    @classmethod
    def from_dict(cls, d: dict) -> "EvaluateConfig":
        legacy = {"gamma", "lr", "tau", "batch_size"}   # flat FQE keys of runs before the prior
        d = {k: v for k, v in d.items() if k != "task"}
        d.setdefault("eval_points", ["reset"])   # a run made before the other point kinds
        d.setdefault("trust", "off")             # ... or the trust report
        d.setdefault("horizons", [])             # ... or the model-based expansions
        if "fqe" not in d:   # a run made before the reward prior: the paper's prior, its own FQE values
            d["fqe"] = to_dict(dataclasses.replace(paper_fqe(), **{k: d[k] for k in legacy if k in d}))
        return from_dict(cls, {k: v for k, v in d.items() if k not in legacy})

    def to_dict(self) -> dict:
        return {"task": "evaluate", **to_dict(self)}

