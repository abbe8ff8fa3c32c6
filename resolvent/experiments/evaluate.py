"""Reward transfer for offline policy evaluation, end to end (paper, section 6.1).

For one family and dataset kind: load the target policy, the offline dataset and the
Monte-Carlo ground truth; draw 32 training and 16 test rewards and m reference points; train
every method's operator with operator FQE (all seeds at once, vmapped) on the run's reward
prior (the family, generic random rewards, or both); log MSE and R^2 along training for the
training, test and out-of-family probe rewards; checkpoint; save the inference models; write
results and the plot.

The same runner serves any dataset (``dataset_source``, ``resolvent.fit``, ``evaluate --data``):
a Minari dataset of any environment, a target policy given as a callable, training rewards
(its own reward, any others) and probes; ground truth where the environment builds, else the
Bellman residual alone.

The ``fqe`` method is the non-zero-shot reference: one plain Q network per test reward,
trained on that reward alone with the same data, steps and hyper-parameters (vmapped over the
rewards and the seeds).
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms import (FQEConfig, OperatorData, identity_encodings, make_initializer,
                                  make_predictor, make_trainer, ridge_weights)
from resolvent.algorithms.fqe import init as fqe_init
from resolvent.algorithms.fqe import train_chunk
from resolvent.algorithms import fb, policy_fqe
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.config import from_dict, to_dict
from resolvent.data import KINDS, check_kind, load_transitions, reference_indices
from resolvent.data.user import checked_policy, load_dataset, load_object, load_probes, named_rewards
from resolvent.envs import make_env
from resolvent.evaluation import GroundTruth, PointsConfig, load_points
from resolvent.evaluation.metrics import score_points
from resolvent.evaluation.points import KINDS as POINT_KINDS
from resolvent.experiments.plots import plot_evaluate
from resolvent.experiments.policy_refs import PolicyRefs, first_step_values, policy_refs
from resolvent.experiments.rundir import RunDir
from resolvent.io import atomic_savez
from resolvent.experiments.runner import run_experiment, train_loop
from resolvent.experiments.trust import choose_method, heldout_rewards, train_oracle, trust_indices
from resolvent.families import get_family
from resolvent.keys import name_id, named_key
from resolvent.model import Arch, OperatorModel
from resolvent.operators import NETWORKS, make_network
from resolvent.policies import load_target_policy
from resolvent.policies.actor import policy_hash
from resolvent.rewards import PriorConfig, PriorStats, generic_rewards, probe_rewards, reward_inputs
from resolvent.rewards.probes import evaluate_reward, reads

OPERATORS = ("attention", "linear", "vanilla", "sf")
METHODS = tuple(k for k, v in NETWORKS.items() if not v.control)   # every evaluation network, fqe included
DEFAULT_METHODS = ("favor", "fb", "sf", "attention")   # the default preset's: rewards under pi first
AUTO_CANDIDATES = ("favor", "fb", "sf", "attention")   # method="auto" trains these, keeps the best held-out
SETS = ("train", "test", "probe", "heldout")      # heldout: the trust report's rewards (none without it)
PREFIX = {"reset": "", "trajectory": "traj_", "dataset": "data_"}   # metric keys per point kind
REF_ACTIONS = ("data", "half-policy")


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
    methods: tuple[str, ...] = DEFAULT_METHODS  # networks (and the fqe oracle) to train; "auto":
    #                                    AUTO_CANDIDATES, keeping the one of best held-out agreement
    seeds: int = 3                     # network seeds, trained at once (vmapped)
    seed: int = 0                      # experiment seed: rewards, reference points, networks
    data_seed: int = 0                 # seed of the dataset's behaviour rollouts
    steps: int = 15_000                # training steps per method
    log_every: int = 500               # steps between metric rows
    checkpoint_every: int = 2_500      # steps between checkpoints (a multiple of log_every)
    m: int = 128                       # reference points
    ref_sampling: str = "uniform"      # reference points: uniform (the paper's) or cover
    ref_actions: str = "data"          # their actions: data (the paper's) or half-policy
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
    trust_points: int = 512            # dataset transitions where it compares the answers
    auto: bool = False                 # set by "auto" in methods: keep the best of AUTO_CANDIDATES
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
    horizons: tuple[int, ...] = (10, 30, 60)  # model-based expansions G_k scored after training (a
    #                                    ``METHOD+kK`` entry each, and auto's candidates; needs the one-step model)

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
        if not 0 < self.gt_tol < 1:
            raise ValueError(f"gt_tol must be in (0, 1), got {self.gt_tol}")
        if self.checkpoint_every % self.log_every:
            raise ValueError("checkpoint_every must be a multiple of log_every")
        if self.steps % self.log_every:
            raise ValueError(f"steps ({self.steps}) must be a multiple of log_every ({self.log_every})")
        if self.fqe.prior is None:
            raise ValueError("an evaluate run needs a reward prior (fqe.prior)")
        if self.absorbing not in ("auto", "on", "off"):
            raise ValueError(f"absorbing must be auto, on or off, got {self.absorbing!r}")
        if self.ref_actions not in REF_ACTIONS:
            raise ValueError(f"unknown ref_actions {self.ref_actions!r}; known: {list(REF_ACTIONS)}")
        if self.trust not in ("auto", "on", "off"):
            raise ValueError(f"trust must be auto, on or off, got {self.trust!r}")
        if self.auto and self.trust == "off":
            raise ValueError("method auto chooses by the trust report: trust cannot be off")
        if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in self.horizons):
            raise ValueError(f"horizons must be integers >= 1 (model steps before the operator), got {self.horizons}")
        for name in ("n_points", "trust_rewards", "trust_points"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
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


Rewards = list[tuple[str, Callable]]   # named reward callables over the transition features


@dataclass
class Source:
    """What a run learns from and is scored against: a family's, or any dataset's."""

    name: str                    # the family, or the Minari dataset id
    spec: object                 # env_id, extras, feature_keys: a RewardFamily or a DatasetSpec
    data: dict                   # transitions (numpy), the schema of ``resolvent.transitions``
    policy: Callable             # the target policy, obs (n, ds) -> actions (n, da)
    rewards: dict[str, Rewards]  # "train", "test", "probe" -> named rewards
    points: dict[str, GroundTruth]  # point kind -> Monte-Carlo ground truth ({}: no environment builds)
    fingerprint: str | None = None  # the target policy's actions' hash (a callable's: checked on resume)

    @property
    def gt(self) -> GroundTruth | None:
        """The reset points' ground truth (None without truth)."""
        return self.points.get("reset")


def family_source(cfg: EvaluateConfig) -> Source:
    """A paper family: its dataset kind, TD3 target, 32 training and 16 test members, probes."""
    family = get_family(cfg.family)
    actor = load_target_policy(family.name)
    data = load_transitions(family, cfg.dataset, cfg.data_seed, actor)
    points = load_points(family, actor, cfg.points_config(), policy_hash(actor), data)
    members = {s: np.asarray(family.sample(named_key(cfg.seed, f"{s}-rewards"), n, s))
               for s, n in (("train", cfg.n_train_rewards), ("test", cfg.n_test_rewards))}
    rewards = {s: [(f"{family.param_name}={v:.3f}", family.reward_callable(v)) for v in ps]
               for s, ps in members.items()}
    return Source(family.name, family, data, actor, {**rewards, "probe": list(probe_rewards(family.name).items())},
                  points)


def dataset_source(cfg: EvaluateConfig, dataset=None, policy=None, rewards: dict | None = None,
                   probes: dict | None = None) -> Source:
    """Any Minari dataset (``cfg.data``, or the ``dataset`` object), target policy (``cfg.policy``
    or the callable ``policy``) and rewards: trained on the dataset's own ``reward`` and
    ``rewards``; probes from ``cfg.probes`` (or the dict ``probes``); ground truth where the
    environment builds."""
    train = [("reward", lambda f: f["reward"])] + named_rewards(rewards, "rewards")
    probes = named_rewards(probes, "probes") if probes is not None else []
    spec, data = load_dataset(dataset if dataset is not None else cfg.data, cfg.env)
    if policy is None:
        if cfg.policy is None:
            raise ValueError("a dataset of one's own needs its target policy (MODULE:ATTR or a callable)")
        policy = load_object(cfg.policy, "policy")
    points, low, high = {}, None, None
    if spec.env_id is not None:
        space = make_env(spec.env_id).action_space
        low, high = np.asarray(space.low, np.float32), np.asarray(space.high, np.float32)
    actor = checked_policy(policy, data["obs"], data["action"].shape[1], low, high, name=cfg.policy)
    fingerprint = policy_fingerprint(actor, data["obs"])
    if spec.env_id is not None:
        points = load_points(spec, actor, cfg.points_config(), fingerprint, data)
    probes = probes or (list(load_probes(cfg.probes).items()) if cfg.probes else [])
    return Source(spec.name, spec, data, actor, {"train": train, "test": [], "probe": probes}, points, fingerprint)


def policy_fingerprint(policy: Callable, obs: np.ndarray) -> str:
    """A short hash of a policy's actions on fixed dataset observations (its ground-truth cache tag)."""
    a = np.asarray(policy(obs[np.linspace(0, len(obs) - 1, 256).astype(int)]), np.float32)
    return hashlib.sha256(np.round(a, 5).tobytes()).hexdigest()[:12]


def check_same_policy(run: RunDir, fingerprint: str | None) -> None:
    """A resumed run must continue with the target policy it started with."""
    before = run.read_results().get("policy_fingerprint")
    if fingerprint is not None and before is not None and before != fingerprint:
        raise ValueError(f"{run.path} was trained for another target policy (its actions' fingerprint "
                         f"{before}, this one's {fingerprint}); resume it with the same policy, or start a new out")


@dataclass
class RewardSet:
    """Named rewards with their values on the data, at the reference and fit points, and truth."""

    names: list[str]
    values: jax.Array        # (R, n) values on the dataset's transitions
    xi_values: jax.Array     # (R, m) values at the reference points
    fit_values: jax.Array    # (R, n_fit) values at the SF fit points
    truth: dict              # point kind -> (R, n_k) true Q: Monte-Carlo; "trust": per-reward FQE's

    def __len__(self) -> int:
        return len(self.names)


@dataclass
class Problem:
    """Everything the methods share: data on device, rewards, ground truth, reference points."""

    source: Source
    x: jax.Array                 # (n, dx) normalised (s, a)
    xn: jax.Array                # (n, dx) normalised (s', pi(s'))
    done: jax.Array              # (n,)
    x_mean: np.ndarray
    x_std: np.ndarray
    xi_features: dict            # raw transition quantities at the reference points (numpy)
    xi: jax.Array                # (m, dx) normalised reference points
    fit_idx: np.ndarray          # (n_fit,)
    features: dict               # raw transition quantities (numpy)
    points: dict                 # point kind -> (n_k, dx) normalised evaluation points ("trust":
    #                              dataset transitions of the trust report)
    sets: dict                   # "train"/"test"/"probe"/"heldout" -> RewardSet
    prior_stats: PriorStats      # normalisation of the generic rewards' inputs
    z_raw: np.ndarray            # (n, dz) raw reward inputs of the dataset
    absorbing: bool = False      # attention's absorbing-state slot
    pi: PolicyRefs | None = None  # rewards scored under the target policy (policy encoding)

    @property
    def r_train(self) -> jax.Array:
        return self.sets["train"].values                                  # (R_tr, n)

    @property
    def extras(self) -> tuple[str, ...]:
        return self.source.spec.extras

    @property
    def has_truth(self) -> bool:
        return bool(self.source.points)

    @property
    def y(self) -> jax.Array | None:
        """Every evaluation point, the kinds one after the other (``points``' order): (n_all, dx)."""
        return jnp.concatenate(list(self.points.values()), 0) if self.points else None

    def split(self, q: jax.Array) -> dict:
        """Predictions (..., n_all) at ``y`` -> point kind -> (..., n_k)."""
        ends = np.cumsum([len(v) for v in self.points.values()])
        return dict(zip(self.points, np.split(np.asarray(q), ends[:-1], axis=-1)))

    def subset(self, idx) -> dict:
        return {k: v[idx] for k, v in self.features.items()}


def prepare(cfg: EvaluateConfig, source: Source | None = None) -> Problem:
    """Dataset, target policy, ground truth, rewards and reference points of an experiment."""
    src = source if source is not None else family_source(cfg) if cfg.data is None else dataset_source(cfg)
    data, actor, gt = src.data, src.policy, src.points
    features = {k: data[k] for k in src.spec.feature_keys}
    x_raw = np.concatenate([data["obs"], data["action"]], -1)
    x_mean, x_std = x_raw.mean(0), x_raw.std(0)
    x_std = np.where(x_std < 1e-3, 1.0, x_std)   # (nearly) constant inputs, e.g. Ant's contact forces
    next_actions = np.concatenate([actor(c) for c in np.array_split(data["next_obs"], max(1, len(x_raw) // 50_000))])
    xn_raw = np.concatenate([data["next_obs"], next_actions], -1)
    n = len(x_raw)
    ref_idx = reference_indices(n, cfg.m, cfg.seed, cfg.ref_sampling, (x_raw - x_mean) / x_std)
    fit_idx = np.sort(np.random.default_rng(cfg.seed + 1).choice(n, min(n, cfg.sf_fit_points), replace=False))
    norm = lambda z: jnp.asarray((z - x_mean) / x_std, jnp.float32)  # noqa: E731
    xi_features = reference_features(features, ref_idx, cfg.ref_actions, actor)
    if cfg.ref_actions == "half-policy":   # probes of next quantities cannot be encoded at pi's actions
        src.rewards["probe"] = [(k, r) for k, r in src.rewards["probe"] if reads(r, features) <= {"obs", "action"}]
    z_raw = reward_inputs(features, src.spec.extras)
    prior_stats = PriorStats.fit(z_raw, src.spec.extras)
    given = src.rewards["train"] if cfg.data is not None else []   # the user's rewards (not a family's)
    src.rewards["heldout"] = (heldout_rewards(cfg.prior, named_key(cfg.seed, "trust-rewards"), prior_stats, z_raw,
                                              cfg.trust_rewards, given) if cfg.trust_report else [])
    sets = {s: reward_set(src.rewards[s], features, xi_features, fit_idx, gt, s) for s in SETS}
    if not all(bool(jnp.all(jnp.isfinite(sets[k].xi_values))) for k in ("train", "test")):
        raise ValueError(f"{src.name}'s rewards read quantities the target policy's reference "
                         f"points do not have; use ref_actions='data'")
    points = {k: norm(np.concatenate([g.obs0, g.action0], -1)) for k, g in gt.items()}
    if cfg.trust_report:
        points["trust"] = norm(x_raw[trust_indices(n, cfg.trust_points, cfg.seed)])
    pi = None
    if any(NETWORKS[m].encoding == "policy" for m in cfg.methods):
        pi = policy_refs(features, next_actions, data["terminated"], x_mean, x_std, src.rewards, src.spec.extras,
                         cfg.onestep, cfg.ref_pool, cfg.seed)
    return Problem(
        source=src, x=norm(x_raw), xn=norm(xn_raw),
        done=jnp.asarray(data["terminated"], jnp.float32), x_mean=x_mean.astype(np.float32),
        x_std=x_std.astype(np.float32), xi_features=xi_features,
        xi=norm(np.concatenate([xi_features["obs"], xi_features["action"]], -1)),
        fit_idx=fit_idx, features=features,
        points=points, sets=sets, prior_stats=prior_stats, z_raw=z_raw,
        absorbing=cfg.absorbing == "on" or (cfg.absorbing == "auto" and cfg.data is not None
                                            and bool(np.any(data["terminated"]))), pi=pi)


def reference_features(features: dict, ref_idx: np.ndarray, actions: str, actor) -> dict:
    """The transition quantities at the reference points. With ``half-policy`` every other
    point takes the target policy's action pi(s) instead of the behaviour's: the operator can
    then see a reward of the action at the actions the policy will take. Those points have no
    next observation or extras (NaN), so only rewards of (obs, action) can be encoded."""
    xi = {k: np.array(v[ref_idx]) for k, v in features.items()}
    if actions == "half-policy":
        pol = np.arange(1, len(ref_idx), 2)                                   # (m/2,)
        xi["action"][pol] = np.asarray(actor(xi["obs"][pol]))
        for k in xi:
            if k not in ("obs", "action"):
                xi[k] = xi[k].astype(np.float32)
                xi[k][pol] = np.nan
    return xi


def reward_set(rewards: Rewards, features: dict, xi_features: dict, fit_idx: np.ndarray,
               points: dict[str, GroundTruth], kind: str) -> RewardSet:
    """Named reward callables checked and evaluated on the data, at the reference and fit points,
    with their Monte-Carlo truth at every point kind ({} without ground truth)."""
    names = [k for k, _ in rewards]
    n, m = len(next(iter(features.values()))), len(next(iter(xi_features.values())))
    if not names:
        return RewardSet([], jnp.zeros((0, n)), jnp.zeros((0, m)), jnp.zeros((0, len(fit_idx))), {})
    what = {"train": "training reward", "test": "test reward", "probe": "probe reward",
            "heldout": "held-out reward"}[kind]
    values = jnp.stack([evaluate_reward(r, features, "dataset's transitions", f"{what} {k!r}") for k, r in rewards])
    xi = jnp.stack([evaluate_reward(r, xi_features, "reference points", f"{what} {k!r}") for k, r in rewards])
    truth = {}
    for point_kind, gt in points.items():
        qs = []
        for k, r in rewards:
            try:
                q = np.asarray(gt.q(r))
            except Exception as e:  # noqa: BLE001 - the user's code: name it and what it raised
                raise ValueError(f"{what} {k!r} failed on the ground-truth rollouts: {type(e).__name__}: {e}") from None
            if q.shape != (len(gt.obs0),) or not np.all(np.isfinite(q)):
                raise ValueError(f"{what} {k!r} gives no finite ground truth of shape ({len(gt.obs0)},) "
                                 f"at the {point_kind} points")
            qs.append(q)
        truth[point_kind] = np.stack(qs)
    return RewardSet(names, values, xi, values[:, fit_idx], truth)


@dataclass
class Method:
    """One method's network, training data, trainer and how it encodes each reward set."""

    name: str
    network: object
    data: OperatorData
    init: Callable               # (keys, data) -> states
    train: Callable              # (states, data, keys) -> (states, loss)
    predict: Callable            # (params) -> {set: (S, R, n_init)} for the sets it answers
    basis: np.ndarray | None = None  # SF: basis values on the fit points (d, n_fit)


def sf_basis(cfg: EvaluateConfig, p: Problem) -> jax.Array:
    """SF's basis on the dataset (d, n): the family's training rewards under a family prior;
    with a generic prior also ``sf_generic_basis`` fixed generic draws (only the generic ones
    under ``generic``)."""
    parts = [p.r_train] if cfg.prior.family else []
    if cfg.prior.generic:
        gen = generic_rewards(cfg.prior, named_key(cfg.seed, "sf-basis"), p.prior_stats, p.z_raw,
                              cfg.sf_generic_basis)
        feats = {k: jnp.asarray(v) for k, v in p.features.items()}
        parts.append(jnp.stack([g(feats) for g in gen]))
    return jnp.concatenate(parts, 0)


def run_fqe(cfg: EvaluateConfig) -> FQEConfig:
    """The run's FQE configuration, its learning-rate schedule spanning the run's steps."""
    return dataclasses.replace(cfg.fqe, decay_steps=cfg.steps)


def make_method(name: str, cfg: EvaluateConfig, p: Problem) -> Method:
    """Network, data and trainer of one method."""
    fqe = run_fqe(cfg)
    xi = p.xi                                                              # (m, dx)
    if name == "fqe":
        return fqe_oracle(cfg, p, xi)
    if NETWORKS[name].encoding == "policy":
        return policy_method(name, cfg, p)
    if name == "sf":
        basis = sf_basis(cfg, p)                                           # (d, n)
        network = make_network(name, cfg.gamma, cfg.hidden, cfg.features, basis.shape[0])
        data = OperatorData(x=p.x, xn=p.xn, rewards=basis, done=p.done, xi=xi,
                            enc=identity_encodings(basis.shape[0]))
        fqe = dataclasses.replace(fqe, prior=None)                         # the basis is fixed
        fit_basis = basis[:, p.fit_idx]                                    # (d, n_fit)
        enc = {s: ridge_weights(fit_basis, p.sets[s].fit_values, cfg.sf_ridge) for s in SETS}
    else:
        network = make_network(name, cfg.gamma, cfg.hidden, cfg.features, 1, absorbing=p.absorbing)
        keep = slice(None) if cfg.prior.family else slice(0)
        z_xi = reward_inputs(p.xi_features, p.extras)
        data = OperatorData(x=p.x, xn=p.xn, rewards=p.r_train[keep], done=p.done, xi=xi,
                            enc=p.sets["train"].xi_values[keep], prior=p.prior_stats.data(p.z_raw, z_xi))
        enc = {s: p.sets[s].xi_values for s in SETS}
        fit_basis = None
    predictor = make_predictor(network)

    def predict(params):
        if p.y is None:
            return {}
        return {s: jnp.swapaxes(predictor(params, p.y, xi, enc[s]), 1, 2) for s in SETS if len(p.sets[s])}

    return Method(name, network, data, make_initializer(network, fqe),
                  make_trainer(network, fqe, cfg.log_every), predict,
                  None if fit_basis is None else np.asarray(fit_basis))


def policy_method(name: str, cfg: EvaluateConfig, p: Problem) -> Method:
    """A method of the ``policy`` encoding: G[r] = r + gamma U[r], U trained by ``policy_fqe``
    (favor, pi-attention) or ``fb``, scored with rewards encoded over the reference pool."""
    refs = p.pi
    network = make_network(name, cfg.gamma, cfg.hidden, cfg.features, 1, absorbing=p.absorbing,
                           random_features=cfg.random_features, kernel_heads=cfg.kernel_heads)
    fqe = run_fqe(cfg)
    keep = slice(None) if cfg.prior.family else slice(0)
    r_train = refs.values["train"][keep]                                   # (R, n) pi-scored
    data = OperatorData(x=p.x, xn=p.xn, rewards=r_train, done=p.done, xi=p.xn[:cfg.n_refs],
                        enc=r_train[:, :cfg.n_refs], prior=p.prior_stats.data(refs.z, refs.z[:1]))
    if name == "fb":
        loss_fn = fb.make_loss(cfg.fb_ortho)
        fqe = dataclasses.replace(fqe, prior=None)                         # FB trains on no reward
    else:
        loss_fn = policy_fqe.make_loss(cfg.n_refs)
    predictor = make_predictor(network)
    at = refs.pool_for(kernel=name != "fb")                               # (N,) positions in the pool
    pool_x = p.xn[refs.pool[at]]                                           # (N, dx)
    first = {}
    if p.y is not None:
        y = np.asarray(p.y) * p.x_std + p.x_mean                           # (n_all, dx) raw (s, a)
        ds = p.features["obs"].shape[1]
        first = {s: first_step_values(refs.model, p.source.rewards[s], y[:, :ds], y[:, ds:], "evaluation points")
                 for s in SETS}                                            # (R, n_all)
    pool_values = {s: refs.values[s][:, refs.pool[at]] if s == "train" else refs.values[s][:, at] for s in SETS}

    def predict(params):
        if p.y is None:
            return {}
        return {s: first[s][None] + cfg.gamma * jnp.swapaxes(predictor(params, p.y, pool_x, pool_values[s]), 1, 2)
                for s in SETS if len(p.sets[s])}                           # (S, R, n_all)

    return Method(name, network, data, make_initializer(network, fqe),
                  make_trainer(network, fqe, cfg.log_every, loss_fn), predict)


def fqe_oracle(cfg: EvaluateConfig, p: Problem, xi, answers: str | None = None) -> Method:
    """Plain FQE, one Q network per test reward (a dataset of one's own: per training reward;
    or the set ``answers``), vmapped over rewards, then seeds."""
    network = make_network("fqe", cfg.gamma, cfg.hidden, cfg.features, 1)
    fqe = dataclasses.replace(run_fqe(cfg), prior=None)
    answers = answers or oracle_set(p)
    r = p.sets[answers].values                                             # (R, n)
    scale = jnp.mean(r, axis=1) / (1.0 - cfg.gamma)                        # (R,)
    data = OperatorData(x=p.x, xn=p.xn, rewards=r[:, None, :], done=p.done, xi=xi,
                        enc=scale[:, None, None])                          # (R, 1, n) (R, 1, 1)
    axes = OperatorData(x=None, xn=None, rewards=0, done=None, xi=None, enc=0)
    names = jnp.asarray([name_id(n) for n in p.sets[answers].names])      # (R,)

    def one(state, d, key, name):
        return train_chunk(state, d, jax.random.fold_in(key, name), cfg.log_every, network, fqe)

    def init_one(key, d, name):
        return fqe_init(network, fqe, jax.random.fold_in(key, name), d)

    init = jax.jit(lambda keys, d: jax.vmap(jax.vmap(init_one, in_axes=(0, None, None)),
                                            in_axes=(None, axes, 0))(keys, d, names))
    train = jax.jit(lambda states, d, keys: jax.vmap(jax.vmap(one, in_axes=(0, None, 0, None)),
                                                     in_axes=(0, axes, None, 0))(states, d, keys, names))
    apply = jax.jit(jax.vmap(jax.vmap(network.apply, in_axes=(0, None, None, None)),
                             in_axes=(0, None, None, 0)))

    def predict(params):                                                   # params (R, S, ...)
        if p.y is None:
            return {}
        q = apply(params, p.y, xi, data.enc)[..., 0]                       # (R, S, n_init)
        return {answers: jnp.swapaxes(q, 0, 1)}                            # (S, R, n_init)

    return Method("fqe", network, data, init, train, predict)


def oracle_set(p: Problem) -> str:
    """The rewards the FQE oracle is trained on: the test rewards, else the training ones."""
    return "test" if len(p.sets["test"]) else "train"


def score(pred: dict, p: Problem) -> dict:
    """Every metric (``resolvent.evaluation.metrics``) per seed of each reward set at each point
    kind where it has truth: {"test_mse": (S,), "test_r2": (S,), "test_rel_rmse": (S,), ...} at
    the reset points, ``traj_test_r2``, ``data_test_r2``, ... at the others, ``trust_r2``, ...
    of the held-out rewards against per-reward FQE; per probe reward ``probe_r2_each`` (P, S),
    per held-out reward ``trust_r2_each``, ``trust_rel_rmse_each`` (H, S)."""
    out = {}
    for s, q in pred.items():                                              # q (S, R, n_all)
        for kind, qk in p.split(q).items():                                # qk (S, R, n_k)
            truth = p.sets[s].truth.get(kind)
            if truth is None:
                continue
            m = score_points(qk, truth)
            head = "trust_" if kind == "trust" else f"{PREFIX[kind]}{s}_"
            out.update({head + k: v for k, v in m.items() if not k.endswith("_each")})
            if (s, kind) == ("probe", "reset"):
                out["probe_r2_each"] = m["r2_each"]
            if kind == "trust":
                out.update(trust_r2_each=m["r2_each"], trust_rel_rmse_each=m["rel_rmse_each"])
    return out


def inference_model(name: str, cfg: EvaluateConfig, p: Problem, method: Method, params) -> OperatorModel:
    n_basis = method.basis.shape[0] if method.basis is not None else cfg.n_train_rewards
    policy = NETWORKS[name].encoding == "policy"
    return OperatorModel(
        method=name, family=cfg.family or p.source.name, gamma=cfg.gamma,
        arch=Arch(hidden=tuple(cfg.hidden), features=cfg.features, n_basis=n_basis,
                  absorbing=p.absorbing and name in ("attention", "favor", "pi-attention"),
                  random_features=cfg.random_features, kernel_heads=cfg.kernel_heads),
        params=params, xi_features=p.pi.pool_features(kernel=name != "fb") if policy else p.xi_features,
        x_mean=p.x_mean, x_std=p.x_std,
        onestep=p.pi.model if policy else None,
        fit_features=p.subset(p.fit_idx) if name == "sf" else None,
        basis=method.basis, ridge=cfg.sf_ridge)


def metric_rows(name: str, seed_ids, step: int, scores: dict, loss, seconds: float) -> list[dict]:
    keys = [k for k in scores if not k.endswith("_each")]
    return [{"method": name, "seed": int(s), "step": step,
             **{k: float(scores[k][i]) for k in keys},
             "loss": None if loss is None else float(loss[i]), "seconds": round(seconds, 3)}
            for i, s in enumerate(seed_ids)]


def run_method(name: str, cfg: EvaluateConfig, p: Problem, run: RunDir, resume: bool) -> dict:
    """Train one method on all seeds; returns its entry of results.json."""
    method = make_method(name, cfg, p)
    seed_ids = np.arange(cfg.seed, cfg.seed + cfg.seeds)
    init_keys = jnp.stack([named_key(cfg.seed, name, "init", str(s)) for s in seed_ids])   # (S, 2)
    keys = jnp.stack([named_key(cfg.seed, name, "train", str(s)) for s in seed_ids])       # (S, 2)
    last = {}

    def log(state, step, loss, seconds):
        scores = score(method.predict(state.params), p)
        loss = None if loss is None else loss.reshape(-1, cfg.seeds).mean(0)   # (S,), fqe: over rewards
        run.append_metrics(metric_rows(name, seed_ids, step, scores, loss, seconds))
        last.update(scores=scores, loss=loss)
        shown = ("test_mse", "test_r2") if "test_mse" in scores else ("train_mse", "train_r2")
        return ({k.replace("_", " "): f"{scores[k].mean():.3g}" for k in shown + ("probe_r2",) if k in scores}
                or {"bellman residual": f"{np.mean(loss):.3g}" if loss is not None else "-"})

    state, step, seconds = train_loop(
        run, name, method.init(init_keys, method.data), keys, cfg.steps, cfg.log_every, cfg.checkpoint_every,
        resume, lambda state, k: method.train(state, method.data, k), log)
    if name != "fqe":
        inference_model(name, cfg, p, method, state.params).save(run.path / "models")
    scores = last.get("scores") or score(method.predict(state.params), p)
    save_predictions(run, name, method.predict(state.params), p)
    entry = entry_of(scores, p)
    if last.get("loss") is not None:
        entry["loss"] = [float(v) for v in last["loss"]]
    return {**entry, "steps": step, "seconds": round(seconds, 2)}


def entry_of(scores: dict, p: Problem) -> dict:
    """``score``'s metrics as a method's results.json entry (lists over seeds; per reward by name)."""
    entry = {k: [float(v) for v in scores[k]] for k in scores if not k.endswith("_each")}
    for key, s in (("probe_r2_each", "probe"), ("trust_r2_each", "heldout"), ("trust_rel_rmse_each", "heldout")):
        if key in scores:
            entry[key] = {n: [float(v) for v in row] for n, row in zip(p.sets[s].names, scores[key])}
    return entry


def expansion_entries(cfg: EvaluateConfig, p: Problem, run: RunDir, methods: dict) -> dict:
    """The model-based expansions (``algorithms/expansion.py``) of every trained operator, scored
    like a method: ``METHOD+kK`` -> its results.json entry, for each K in ``cfg.horizons``. The run's
    one-step model (fitted for the policy encoding) and target policy serve every operator."""
    if not cfg.horizons or p.pi is None or p.y is None:
        return {}
    raw = np.asarray(p.y) * p.x_std + p.x_mean                             # (n_all, dx) every point
    ds = p.features["obs"].shape[1]
    out = {}
    for name in (m for m in cfg.methods if m != "fqe" and m in methods):
        model = OperatorModel.load(run.path / "models", name)
        model.onestep, model.target_policy = p.pi.model, p.source.policy
        for k in cfg.horizons:
            pred = {s: np.stack([model.q_values(r, raw[:, :ds], raw[:, ds:], seed=None, horizon=k)
                                 for _, r in p.source.rewards[s]], 1)       # (S, R, n_all)
                    for s in SETS if len(p.sets[s])}
            if k == max(cfg.horizons):   # the scatter plot shows the longest expansion beside the operator
                save_predictions(run, f"{name}+k{k}", pred, p)
            out[f"{name}+k{k}"] = {**entry_of(score(pred, p), p), "steps": methods[name]["steps"],
                                   "seconds": methods[name]["seconds"], "horizon": k}
    return out


def run_evaluate(cfg: EvaluateConfig, out: str | Path, resume: bool = False, plot: bool = True,
                 source: Source | None = None) -> dict:
    """Run (or resume) an experiment into ``out``; returns results.json's content (the shared
    runner, ``run_experiment``). ``source`` overrides what ``cfg`` names (a dataset object, a
    policy or rewards given in Python)."""
    def header(cfg: EvaluateConfig, p: Problem, run: RunDir) -> dict:
        check_same_policy(run, p.source.fingerprint)
        p.prior_stats.save(run.path / "prior.npz")     # derived from the data: rewritten, never trusted
        oracle = trust_truth(cfg, p, run) if cfg.trust_report else {}
        return {"family": cfg.family, "dataset": cfg.dataset if cfg.data is None else cfg.data,
                "task": "evaluate", "ground_truth": p.has_truth, "train_rewards": p.sets["train"].names,
                "reward_prior": cfg.prior.kind, "probes": p.sets["probe"].names,
                "eval_points": {k: len(v) for k, v in p.points.items()},
                **({"heldout_rewards": p.sets["heldout"].names} if cfg.trust_report else {}),
                **({"trust_oracle": oracle} if oracle else {}),
                **({"policy_fingerprint": p.source.fingerprint} if p.source.fingerprint else {})}

    def finish(cfg: EvaluateConfig, p: Problem, results: dict) -> dict:
        base = {m: r for m, r in results["methods"].items() if "+k" not in m}
        methods = {**base, **expansion_entries(cfg, p, RunDir(out), base)}
        candidates = tuple(m for m in methods if m.split("+k")[0] in AUTO_CANDIDATES)
        return {"methods": methods, **({"auto": choose_method(methods, candidates)} if cfg.auto else {})}

    return run_experiment(cfg, EvaluateConfig, out, resume, lambda c: prepare(c, source), header, run_method,
                          plot_evaluate if plot else None, finish)


def trust_truth(cfg: EvaluateConfig, p: Problem, run: RunDir) -> dict:
    """The trust report's truth: per-reward FQE (one seed) on the held-out rewards, its answer at
    the trust points stored as their ``trust`` truth. Returns the oracle's own accuracy where
    Monte-Carlo truth exists (``data_heldout_r2``, ...; {} without truth)."""
    oracle = fqe_oracle(cfg, p, p.xi, answers="heldout")
    params = train_oracle(run, oracle, cfg.seed, cfg.steps, cfg.log_every, cfg.checkpoint_every)
    q = oracle.predict(params)["heldout"]                                  # (1, H, n_all)
    own = {k: float(v[0]) for k, v in score({"heldout": q}, p).items() if not k.endswith("_each")}
    p.sets["heldout"].truth["trust"] = p.split(q[0])["trust"]              # (H, n_trust)
    return own


def save_predictions(run: RunDir, name: str, pred: dict, p: Problem) -> None:
    """A method's final answers (mean over seeds) beside the truth, per reward set and point
    kind, into ``predictions.npz`` (``METHOD|SET|KIND|pred`` and ``...|truth``, (R, n_k)): the
    scatter plot reads it."""
    path = run.path / "predictions.npz"
    arrays = {}
    if path.is_file():
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files if not k.startswith(f"{name}|")}
    for s, q in pred.items():                                              # (S, R, n_all)
        for kind, qk in p.split(q).items():
            truth = p.sets[s].truth.get(kind)
            if truth is not None:
                arrays[f"{name}|{s}|{kind}|pred"] = np.asarray(qk).mean(0)
                arrays[f"{name}|{s}|{kind}|truth"] = np.asarray(truth)
    if arrays:
        atomic_savez(path, **arrays)


__all__ = ["KINDS", "METHODS", "OPERATORS", "PRESETS", "EvaluateConfig", "Source", "dataset_source",
           "family_source", "named_key", "prepare", "run_evaluate"]
