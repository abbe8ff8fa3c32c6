"""What every method of an evaluate run shares (``prepare`` -> ``Problem``): the data on
device, normalised; the reward sets with their values on the data, at the reference and fit
points, and their truth; the reference points; the evaluation points."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms.expansion import Rollouts
from resolvent.data import reference_indices
from resolvent.evaluation import GroundTruth
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.policy_refs import PolicyRefs, policy_refs
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.sources import Rewards, Source, config_source
from resolvent.experiments.trust import heldout_rewards, trust_indices
from resolvent.keys import named_key
from resolvent.model import OperatorModel, load_support
from resolvent.operators import NETWORKS
from resolvent.rewards import PriorStats, reward_inputs
from resolvent.rewards.probes import evaluate_reward, reads

SETS = ("train", "test", "probe", "heldout")      # heldout: the trust report's rewards (none without it)


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
class TrustTransitions:
    """The trust report's dataset transitions, where every answer's Bellman residual on the
    held-out rewards is measured (its points: ``trust`` (s, a) and ``trust_next`` (s', pi(s')))."""

    rewards: np.ndarray      # (H, n_trust) the held-out rewards' values on the transitions
    scale: np.ndarray        # (H,) each reward's RMS over the whole dataset: the residual's unit
    done: np.ndarray         # (n_trust,) terminated flags
    gamma: float             # the discount the methods learn with


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
    points: dict                 # point kind -> (n_k, dx) normalised evaluation points ("trust",
    #                              "trust_next": the trust report's transitions, (s, a) and (s', pi(s')))
    raw: dict                    # point kind -> (n_k, dx) the same points unnormalised, exactly as given
    sets: dict                   # "train"/"test"/"probe"/"heldout" -> RewardSet
    prior_stats: PriorStats      # normalisation of the generic rewards' inputs
    z_raw: np.ndarray            # (n, dz) raw reward inputs of the dataset
    absorbing: bool = False      # attention's absorbing-state slot
    pi: PolicyRefs | None = None  # rewards scored under the target policy (policy encoding)
    trust: TrustTransitions | None = None  # the trust report's transitions (None without it)

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

    @property
    def slices(self) -> dict:
        """Point kind -> its rows of ``y``."""
        ends = np.cumsum([len(v) for v in self.points.values()])
        return {kind: slice(end - len(v), end) for (kind, v), end in zip(self.points.items(), ends)}

    def raw_points(self) -> tuple[np.ndarray, np.ndarray]:
        """Every evaluation point unnormalised, ``y``'s rows: observations (n_all, ds), actions (n_all, da),
        exactly the truth's (not ``y`` normalised back: the closed loop of a chaotic system, HalfCheetah's,
        moves a k = 400 answer by several percent for an input 1e-6 away)."""
        raw = np.concatenate(list(self.raw.values()), 0)                       # (n_all, dx)
        ds = self.features["obs"].shape[1]
        return raw[:, :ds], raw[:, ds:]

    def split(self, q: jax.Array) -> dict:
        """Predictions (..., n_all) at ``y`` -> point kind -> (..., n_k)."""
        q = np.asarray(q)
        return {kind: q[..., rows] for kind, rows in self.slices.items()}

    def subset(self, idx) -> dict:
        return {k: v[idx] for k, v in self.features.items()}

    def expansion_model(self, models: str | Path, name: str, rollouts: Rollouts | None = None) -> OperatorModel:
        """The operator ``name`` saved under ``models`` (a run's ``models/``), set to answer by its
        expansion as the run does: the run's one-step model of the data and its target policy, and
        ``rollouts`` (one shared by several models rolls each set of points out once; a new one by
        default)."""
        if self.pi is None:
            raise ValueError(f"{name}: this run scores no reward under the target policy, so it has no one-step "
                             f"model to expand with (a run of a policy-encoded method has)")
        model = OperatorModel.load(models, name)
        model.onestep, model.target_policy = self.pi.model, self.source.policy
        model.rollouts = Rollouts() if rollouts is None else rollouts
        model.support = load_support(models)      # the run's check: its expansions' supported dynamics, if asked
        return model


def input_stats(x_raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The networks' input normalisation of the data's (s, a) rows (n, dx): mean and std (dx,),
    a (nearly) constant input (Ant's contact forces) left unscaled."""
    x_std = x_raw.std(0)
    return x_raw.mean(0), np.where(x_std < 1e-3, 1.0, x_std)


def prepare(cfg: EvaluateConfig, source: Source | None = None) -> Problem:
    """Dataset, target policy, ground truth, rewards and reference points of an experiment."""
    src = source if source is not None else config_source(cfg)
    data, actor, gt = src.data, src.policy, src.points
    features = {k: data[k] for k in src.spec.feature_keys}
    x_raw = np.concatenate([data["obs"], data["action"]], -1)
    x_mean, x_std = input_stats(x_raw)
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
    # the trust report's given rewards: a user's own, or a family's first ``trust_family_rewards``
    given = src.rewards["train"] if cfg.data is not None else src.rewards["train"][:cfg.trust_family_rewards]
    src.rewards["heldout"] = (heldout_rewards(cfg.prior, named_key(cfg.seed, "trust-rewards"), prior_stats, z_raw,
                                              cfg.trust_rewards, given) if cfg.trust_report else [])
    sets = {s: reward_set(src.rewards[s], features, xi_features, fit_idx, gt, s) for s in SETS}
    if not all(bool(jnp.all(jnp.isfinite(sets[k].xi_values))) for k in ("train", "test")):
        raise ValueError(f"{src.name}'s rewards read quantities the target policy's reference "
                         f"points do not have; use ref_actions='data'")
    raw = {k: np.concatenate([g.obs0, g.action0], -1) for k, g in gt.items()}         # kind -> (n_k, dx)
    trust = None
    if cfg.trust_report:
        idx = trust_indices(n, cfg.trust_points, cfg.seed)
        raw["trust"], raw["trust_next"] = x_raw[idx], xn_raw[idx]
        held = np.asarray(sets["heldout"].values)                                        # (H, n)
        trust = TrustTransitions(held[:, idx], np.sqrt(np.mean(held ** 2, axis=1)),
                                 np.asarray(data["terminated"][idx], np.float32), cfg.gamma)
    pi = None
    if any(NETWORKS[m].encoding == "policy" for m in cfg.methods):
        pi = policy_refs(features, next_actions, data["terminated"], x_mean, x_std, src.rewards, src.spec.extras,
                         cfg.onestep, cfg.ref_pool, cfg.seed, src.terminal)
    return Problem(
        source=src, x=norm(x_raw), xn=norm(xn_raw),
        done=jnp.asarray(data["terminated"], jnp.float32), x_mean=x_mean.astype(np.float32),
        x_std=x_std.astype(np.float32), xi_features=xi_features,
        xi=norm(np.concatenate([xi_features["obs"], xi_features["action"]], -1)),
        fit_idx=fit_idx, features=features,
        points={k: norm(v) for k, v in raw.items()}, raw=raw, sets=sets, prior_stats=prior_stats, z_raw=z_raw,
        absorbing=cfg.absorbing == "on" or (cfg.absorbing == "auto" and cfg.data is not None
                                            and bool(np.any(data["terminated"]))), pi=pi, trust=trust)


def open_run(path: str | Path) -> tuple[EvaluateConfig, Problem]:
    """A run directory's configuration and its problem prepared again from it (the data, rewards,
    points, and the one-step model refitted as the run fitted it): where a script reading a finished
    run starts (``Problem.expansion_model`` then gives its operators)."""
    cfg = EvaluateConfig.from_dict(RunDir(path).read_config())
    return cfg, prepare(cfg)


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

