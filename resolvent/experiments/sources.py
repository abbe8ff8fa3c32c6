"""Where an evaluate run's data comes from: a paper family (``family_source``) or any Minari
dataset with a target policy given by the user (``dataset_source``), as one ``Source``; and the
target policy's fingerprint that a resumed run is checked against."""
from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from resolvent.algorithms.onestep import RuleRef, ends, rule_disagreement, terminal_flags
from resolvent.data import load_transitions
from resolvent.data.user import checked_policy, load_dataset, load_object, load_probes, named_rewards
from resolvent.endings import rule_name, terminal_for
from resolvent.envs import make_env
from resolvent.evaluation import GroundTruth, load_points
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.families import get_family
from resolvent.keys import named_key
from resolvent.policies import load_target_policy
from resolvent.policies.actor import policy_hash

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
    terminal: Callable | None = None  # the environment's termination rule, where one is known (``endings.Terminal``)

    @property
    def gt(self) -> GroundTruth | None:
        """The reset points' ground truth (None without truth)."""
        return self.points.get("reset")


def family_source(cfg: EvaluateConfig) -> Source:
    """A paper family: its dataset kind, TD3 target, 32 training and 16 test members, probes; a
    termination rule only where one is named (``auto`` is none for a family)."""
    family = get_family(cfg.family)
    actor = load_target_policy(family.name)
    data = load_transitions(family, cfg.dataset, cfg.data_seed, actor)
    points = load_points(family, actor, cfg.points_config(), policy_hash(actor), data)
    members = {s: np.asarray(family.sample(named_key(cfg.seed, f"{s}-rewards"), n, s))
               for s, n in (("train", cfg.n_train_rewards), ("test", cfg.n_test_rewards))}
    rewards = {s: [(f"{family.param_name}={v:.3f}", family.reward_callable(v)) for v in ps]
               for s, ps in members.items()}
    terminal = None if cfg.terminal == "auto" else config_terminal(cfg.terminal, family.env_id, data)
    return Source(family.name, family, data, actor, {**rewards, "probe": list(family.probe_rewards().items())},
                  points, terminal=terminal)


def dataset_source(cfg: EvaluateConfig, dataset=None, policy=None, rewards: dict | None = None,
                   probes: dict | None = None, terminal: Callable | None = None) -> Source:
    """Any Minari dataset (``cfg.data``, or the ``dataset`` object), target policy (``cfg.policy``
    or the callable ``policy``) and rewards: trained on the dataset's own ``reward`` and
    ``rewards``; probes from ``cfg.probes`` (or the dict ``probes``); ground truth where the
    environment builds; the termination rule ``cfg.terminal`` (or the callable ``terminal``)."""
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
    if terminal is None:
        terminal = config_terminal(cfg.terminal, spec.env_id, data)
    elif not callable(terminal):
        raise ValueError(f"the termination rule must be a callable of a transition (obs, action, next_obs), "
                         f"got {type(terminal).__name__}")
    return Source(spec.name, spec, data, actor, {"train": train, "test": [], "probe": probes}, points, fingerprint,
                  terminal)


def config_source(cfg: EvaluateConfig) -> Source:
    """The source a run's configuration names: its family's, or its dataset's."""
    return family_source(cfg) if cfg.data is None else dataset_source(cfg)


def answered_rewards(src: Source) -> dict[str, Rewards]:
    """The rewards a finished run is answered on by default (``resolvent calibrate``), by set: a
    family's test rewards (a dataset of one's own has none: its own reward, the training set),
    then the probes."""
    return {s: src.rewards[s] for s in ("test" if src.rewards["test"] else "train", "probe")}


def config_terminal(choice: str, env_id: str | None, data: dict) -> RuleRef | None:
    """The termination rule ``choice`` names (``EvaluateConfig.terminal``): MODULE:ATTR, none, or
    auto: the registered rule of ``env_id`` (``resolvent/endings.py``) where the data terminates
    and its ``terminated`` flag agrees with the rule on every transition (else none, with a
    warning where the data terminates and no rule is known or it disagrees)."""
    if choice == "none":
        return None
    if choice == "callable":
        raise ValueError("this run's termination rule was a callable given to resolvent.fit, which a run does not "
                         "save: give it again (resolvent.fit(..., terminal=rule, resume=True))")
    if choice != "auto":
        rule = RuleRef(choice)
        # a wrong name, a rule that fails, data that never ends: each one clear error before any training
        terminal_flags(rule, transition_rows(data, 2), "dataset's transitions")
        ends(data)
        return rule
    if not np.any(np.asarray(data.get("terminated", 0)) > 0.5):
        return None
    known = terminal_for(env_id)
    if known is None:
        warnings.warn(f"the dataset's episodes terminate, and no termination rule is known for {env_id or 'its'} "
                      f"environment: the one-step model learns the flag from (s, a), which is soft where a step "
                      f"crosses into an ending (a goal bonus then paid about twice); give terminal=MODULE:ATTR, "
                      f"1 where a transition (obs, action, next_obs) ends, if you know the rule", stacklevel=2)
        return None
    rule = RuleRef(rule_name(known))
    wrong, n = rule_disagreement(rule, data)
    if wrong:
        warnings.warn(f"{env_id}'s termination rule (resolvent/endings.py) disagrees with the dataset's `terminated` "
                      f"flag on {wrong} of {n} transitions (an environment made with other arguments?): not used; "
                      f"the one-step model learns the flag (give terminal=MODULE:ATTR for a rule of your own)",
                      stacklevel=2)
        return None
    return rule


def transition_rows(data: dict, n: int) -> dict:
    """The first n transitions' obs, action and next_obs (what a termination rule reads)."""
    return {k: np.asarray(data[k][:n], np.float32) for k in ("obs", "action", "next_obs")}


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

