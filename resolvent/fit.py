"""``resolvent.fit``: the operator of any offline dataset and target policy, from Python.

    import resolvent
    model = resolvent.fit(dataset, policy, out="runs/mine", steps=20_000, seeds=1)   # method="auto"
    q = model.q_values(reward, observations, actions)        # any reward callable, zero-shot
    model = resolvent.load("runs/mine")    # the same model later: the one auto kept
    model.check_support(observations).summary()   # which points pi takes actions the data never took near

It is ``resolvent evaluate --data ID --policy MODULE:ATTR`` (the same runner, run directory,
checkpoints, metrics, plot and resume): the operators train on the generic reward prior plus
the dataset's own ``reward`` and any ``rewards`` given, and where the environment builds,
Monte-Carlo ground truth scores them (MSE, R^2) on those rewards and on ``probes``.
"""
from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path
from typing import Callable, Mapping

from resolvent.model import CheckpointError, MeanModel, OperatorModel, attach_rule, load
from resolvent.paths import compile_cache


def fit(dataset, policy, out: str | Path, method: str | tuple[str, ...] | None = None, steps: int | None = None,
        seeds: int | None = None, rewards: Mapping[str, Callable] | None = None,
        probes: Mapping[str, Callable] | str | None = None, env: str | None = None,
        terminal: Callable | str | None = None, preset: str | None = None, resume: bool = False,
        plot: bool = True, **config) -> OperatorModel | MeanModel:
    """Train the operator(s) ``method`` on ``dataset`` for the target ``policy``; returns the run's
    answer, the model ``resolvent.load(out)`` gives (``default_method``): under ``method="auto"``
    the candidate the trust report's rule keeps (``experiments/trust.py``; the report in
    results.json; an expansion averaged with its tied operators', a ``MeanModel``), else the
    run's most accurate answer against its ground truth, else the one
    auto's rule keeps by the run's trust report, else its first operator's (with its horizon
    chosen per reward where the run has expansions).

    ``dataset``: a ``minari.MinariDataset`` or its id. ``policy``: a deterministic callable
    ``observations (n, ds) -> actions (n, da)``, or ``"MODULE:ATTR"``. ``method`` (default
    ``"auto"``: favor, fb, sf and attention trained with their expansions, and the longest
    expansion near the best held-out agreement with per-reward FQE or Bellman residual kept (or a
    METHOD+kauto near the best that agrees better), or in
    its place its operator's answer with the data's bank where that one's Bellman residual is no
    larger and its agreement in the band: a bank of 2048 states is made by default under auto,
    ``trust.with_bank``),
    ``steps`` (20,000), ``seeds`` (1), ``preset`` (``"default"``).
    ``rewards``: named reward callables to train on besides the dataset's own. ``probes``: named
    rewards (or a Python file defining ``PROBES``) only scored. ``env``: the Gymnasium id for
    ground truth (default: the dataset's). ``terminal``: the environment's termination rule, a
    callable of a transition's ``obs``, ``action``, ``next_obs`` returning 1 where it ends and 0
    where it goes on, ``"MODULE:ATTR"``, ``"none"``, or ``"auto"`` (the default: the rule
    ``resolvent/endings.py`` knows for the dataset's environment, where the data agrees with it):
    the one-step model's rollouts end by it, and what an ending pays is learned from the data's
    terminal transitions. ``config``: any other ``EvaluateConfig`` field (``m``, ``n_initial``,
    ``bank=BankConfig(points=2048)``: the data's bank for any method, ``resolvent.load(out,
    "favor+b400+k30")``; ``points=0``: none, even under auto, ...). ``resume=True`` continues a
    killed run in ``out`` with its own configuration (give the same callables again; any option
    given must agree with the run's, and the policy's actions must be the same). JAX's compiled
    programs are kept across processes (``paths.compile_cache``).
    """
    compile_cache()
    # the experiments (matplotlib, minari) load on the first fit, not on ``import resolvent``
    from resolvent.data.user import named_rewards
    from resolvent.experiments.evaluate import PRESETS, EvaluateConfig, dataset_source, run_evaluate
    from resolvent.experiments.rundir import RunDir

    methods = None if method is None else (method,) if isinstance(method, str) else tuple(method)
    if methods is not None and methods and all(m == "fqe" for m in methods):
        raise ValueError("fit returns an operator model; 'fqe' is the per-reward oracle, which has none: "
                         "add an operator method (favor, fb, sf, attention, ...)")
    if preset is not None and preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
    if steps is not None and (isinstance(steps, bool) or not float(steps).is_integer()):
        raise ValueError(f"steps must be an integer, got {steps!r}")
    known = {f.name for f in fields(EvaluateConfig)} - {"family", "dataset", "data", "policy", "env", "probes",
                                                       "terminal", "methods", "steps", "seeds"}
    if set(config) - known:
        raise ValueError(f"unknown fit options {sorted(set(config) - known)}; known: {sorted(known)}")
    named_rewards(rewards, "rewards")
    if not isinstance(probes, (str, Path)):
        named_rewards(probes, "probes")
    dataset_id = dataset if isinstance(dataset, str) else dataset.spec.dataset_id
    policy_ref = policy if isinstance(policy, str) else None
    probes_ref = str(probes) if isinstance(probes, (str, Path)) else None
    terminal_ref = terminal if isinstance(terminal, str) or terminal is None else "callable"   # given here, not saved
    if resume:
        run = RunDir(out)
        try:
            cfg = EvaluateConfig.from_dict(run.read_config())
        except (TypeError, ValueError, AttributeError) as e:
            raise CheckpointError(f"{run.config_path} is damaged: {type(e).__name__}: {e}") from None
        auto = methods is not None and "auto" in methods and getattr(cfg, "auto", False)   # stored expanded
        given = {"data": dataset_id, "methods": None if auto else methods,
                 "steps": None if steps is None else int(steps), "seeds": seeds, "env": env, "policy": policy_ref,
                 "probes": probes_ref, "terminal": terminal_ref,
                 "fqe": PRESETS[preset]() if preset in PRESETS and "fqe" not in config else None, **config}
        differ = sorted(k for k, v in given.items() if v is not None and getattr(cfg, k, v) != v)
        if differ:
            raise ValueError(f"resume=True continues the run in {out} with its own configuration, which differs in "
                             + ", ".join(f"{k} ({getattr(cfg, k)!r}, given {given[k]!r})" for k in differ)
                             + "; give the same values, or none, or start a new out")
    else:
        steps = 20_000 if steps is None else int(steps)
        # the config's own cadence, or the largest divisor of steps below it (steps need not be a multiple)
        log_every = config.pop("log_every", math.gcd(steps, EvaluateConfig.log_every) or 1)
        cfg = EvaluateConfig.preset(
            preset or "default", family=None, data=dataset_id, policy=policy_ref, env=env, probes=probes_ref,
            terminal=terminal_ref or "auto", methods=methods or ("auto",), steps=steps,
            seeds=1 if seeds is None else seeds,
            log_every=log_every,
            checkpoint_every=config.pop("checkpoint_every",
                                        log_every * max(1, EvaluateConfig.checkpoint_every // log_every)), **config)
    if all(m == "fqe" for m in cfg.methods):
        raise ValueError("fit returns an operator model; this run trains only 'fqe', the per-reward oracle")
    source = dataset_source(cfg, dataset=dataset, policy=None if policy_ref else policy, rewards=rewards,
                            probes=None if probes_ref else probes,
                            terminal=terminal if callable(terminal) else None)
    run_evaluate(cfg, out, resume=resume, plot=plot, source=source)
    model = load(out)                     # the run's answer: auto's pick, the most accurate, ... (default_method)
    model.target_policy = source.policy   # the expansion's actor (horizon > 0): the policy given here
    if source.terminal is not None:
        attach_rule(model, source.terminal)   # and the rule given here
    return model
