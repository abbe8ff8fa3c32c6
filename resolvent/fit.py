"""``resolvent.fit``: the operator of any offline dataset and target policy, from Python.

    import resolvent
    model = resolvent.fit(dataset, policy, out="runs/mine", method="attention", steps=20_000, seeds=1)
    q = model.q_values(reward, observations, actions)        # any reward callable, zero-shot
    model = resolvent.load("runs/mine", method="attention")    # the same model later

It is ``resolvent evaluate --data ID --policy MODULE:ATTR`` (the same runner, run directory,
checkpoints, metrics, plot and resume): the operators train on the generic reward prior plus
the dataset's own ``reward`` and any ``rewards`` given, and where the environment builds,
Monte-Carlo ground truth scores them (MSE, R^2) on those rewards and on ``probes``.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Mapping

from resolvent.model import OperatorModel


def fit(dataset, policy, out: str | Path, method: str | tuple[str, ...] = "attention", steps: int = 20_000,
        seeds: int = 1, rewards: Mapping[str, Callable] | None = None,
        probes: Mapping[str, Callable] | str | None = None, env: str | None = None,
        preset: str = "default", resume: bool = False, plot: bool = True, **config) -> OperatorModel:
    """Train the operator(s) ``method`` on ``dataset`` for the target ``policy``; returns the model
    of the first method (``method="auto"``: the candidate of best held-out agreement with
    per-reward FQE, the trust report in results.json).

    ``dataset``: a ``minari.MinariDataset`` or its id. ``policy``: a deterministic callable
    ``observations (n, ds) -> actions (n, da)``, or ``"MODULE:ATTR"``. ``rewards``: named reward
    callables to train on besides the dataset's own. ``probes``: named rewards (or a Python file
    defining ``PROBES``) only scored. ``env``: the Gymnasium id for ground truth (default: the
    dataset's). ``config``: any other ``EvaluateConfig`` field (``m``, ``n_initial``, ...).
    ``resume=True`` continues a killed run in ``out`` (give the same callables again).
    """
    # the experiments (matplotlib, minari) load on the first fit, not on ``import resolvent``
    from resolvent.experiments.evaluate import EvaluateConfig, dataset_source, run_evaluate
    from resolvent.experiments.rundir import RunDir

    methods = (method,) if isinstance(method, str) else tuple(method)
    dataset_id = dataset if isinstance(dataset, str) else dataset.spec.dataset_id
    policy_ref = policy if isinstance(policy, str) else None
    log_every = config.pop("log_every", math.gcd(int(steps), 500) or 1)
    cfg = EvaluateConfig.preset(
        preset, family=None, data=dataset_id, policy=policy_ref, env=env,
        probes=str(probes) if isinstance(probes, (str, Path)) else None, methods=methods, steps=int(steps),
        seeds=int(seeds), log_every=log_every,
        checkpoint_every=config.pop("checkpoint_every", log_every * max(1, 2500 // log_every)), **config)
    if resume:
        cfg = EvaluateConfig.from_dict(RunDir(out).read_config())
    source = dataset_source(cfg, dataset=dataset, policy=None if policy_ref else policy, rewards=rewards,
                            probes=None if isinstance(probes, (str, Path)) else probes)
    results = run_evaluate(cfg, out, resume=resume, plot=plot, source=source)
    if "auto" in results:
        return OperatorModel.load(Path(out) / "models", results["auto"]["chosen"])
    return OperatorModel.load(Path(out) / "models", methods[0] if methods[0] != "fqe" else methods[-1])
