"""Single-reward baselines: what zero-shot transfer costs.

For each of an optimize experiment's logged test rewards r_theta (the same stratified draw,
same seed), a policy trained for r_theta ALONE:

- ``offline``: the same offline algorithm (operator DQN / BCQ, same networks and budget) on
  the same dataset relabelled with r_theta only (``OptimizeConfig.train_params = (theta,)``);
- ``td3``: TD3 (sbx) trained online in the environment whose reward is r_theta (``FamilyReward``,
  wrapper computing the family's reward from each step), as the family's target policy was
  for the original reward; needs the ``train`` extra.

Both are scored like the zero-shot policies: mean return over the same evaluation episodes
(same reset seeds) under r_theta. ``baselines.json`` gathers, per test reward, the zero-shot
returns of the optimize run (when given) and its TD3 target policy's (trained for the original
reward) next to the baselines'; ``resolvent figure transfer`` draws them.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from resolvent.evaluation import actor_returns
from resolvent.experiments.optimize import (OptimizeConfig, eval_seed, run_optimize,
                                            stratified_test_params)
from resolvent.experiments.rundir import RunDir
from resolvent.model import read_run_json
from resolvent.families import get_family
from resolvent.keys import named_key
from resolvent.policies.td3 import train_td3

KINDS = ("offline", "td3")
TARGET = "TD3 target policy (original reward)"


def logged_test_rewards(cfg: OptimizeConfig) -> tuple[list[str], np.ndarray]:
    """The optimize experiment's logged test rewards: names and parameters."""
    family = get_family(cfg.family)
    params = stratified_test_params(family, named_key(cfg.seed, "test-rewards"), cfg.n_return_rewards)
    return [f"{family.param_name}={p:+.3f}" for p in params], params


def run_baselines(cfg: OptimizeConfig, out: str | Path, kinds=KINDS, td3_steps: int | None = None,
                  zero_shot: str | Path | None = None) -> dict:
    """Train the single-reward baselines of ``cfg``'s test rewards into ``out``; baselines.json."""
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"unknown baseline kind {k!r}; known: {list(KINDS)}")
    family = get_family(cfg.family)
    run = RunDir(out)
    path = run.path / "baselines.json"
    summary = read_run_json(path)
    summary.update(family=cfg.family, dataset=cfg.dataset, config=cfg.to_dict())
    rewards = summary.setdefault("rewards", {})
    if zero_shot is not None:
        res = RunDir(zero_shot).read_results()
        for m, r in res["methods"].items():
            for name, v in r["test_returns"].items():
                rewards.setdefault(name, {})[f"zero-shot {m}"] = v
        for name, v in res.get("target_test_returns", {}).items():
            rewards.setdefault(name, {})[TARGET] = [float(v)]
    names, params = logged_test_rewards(cfg)
    for name, param in zip(names, params):
        entry = rewards.setdefault(name, {})
        if "offline" in kinds:
            sub = run.path / f"offline-{name}"
            single = dataclasses.replace(cfg, train_params=(float(param),))
            res = run_optimize(single, sub, resume=(sub / "config.json").is_file())
            for m, r in res["methods"].items():
                entry[f"offline {m} (this reward only)"] = r["test_returns"][name]
        if "td3" in kinds:
            actor, _ = train_td3(family, steps=td3_steps, seed=cfg.seed, out_dir=run.path / f"td3-{name}",
                                 param=float(param))
            ret = actor_returns(family, actor, [family.reward_callable(float(param))],
                                cfg.eval_episodes, eval_seed(cfg))[0]
            entry["td3 online (this reward only)"] = [float(ret.mean())]
        run.write_json("baselines.json", summary)
    run.write_json("baselines.json", summary)
    return summary
