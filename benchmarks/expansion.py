"""Accuracy of the model-based expansion G_k (``resolvent/algorithms/expansion.py``) by horizon k.

    python benchmarks/expansion.py RUN_DIR [--methods favor,fb,sf,attention] [--horizons 0,10,30,60,150,400,auto]
        [--points reset,trajectory,dataset] [--onestep-steps N [--ensemble E --keep M] [--onestep-file F.npz]]
        [--out FILE.jsonl] [--predictions FILE.npz]
    python benchmarks/expansion.py --tiny          # a smoke run: trains a tiny run first

For every trained operator of a finished ``resolvent evaluate`` run (the FQE oracle excepted),
every horizon k, reward set (test, probe; on a dataset of one's own also train: its own reward)
and evaluation point kind with Monte-Carlo truth, one JSON line: ``r2`` (mean over the set's
rewards, network seeds averaged first), ``worst_r2`` and its reward, ``rel_rmse``, ``spearman``,
``mse`` per reward.
k = 0 is the operator's own answer, the number the run's table reports. The run's one-step
model of the data (saved with its policy-encoding operators, favor, fb, pi-attention) serves
every method, the paper's networks included: it is a model of the data, not of an operator.
``--onestep-steps N`` fits that model again with N Adam steps instead (the operators unchanged);
with ``--ensemble E`` as E members, each rolled out on its own, and ``--keep M,...`` answers
by the mean of the M most central members per point (``OneStepConfig``; one fit for every M).
``--onestep-file F.npz`` keeps that refit: read from F where it exists, else fitted and written
there. ``--predictions FILE.npz`` writes every answer and its truth (``METHOD|kK|SET|KIND`` and
``truth|SET|KIND``, each (rewards, points)) for studies of the answers themselves.
``auto`` among the horizons answers with k chosen per reward among the others
(``algorithms/horizon.py``: the ensemble's spread under pi, a single model checked along the
data's stretches, every other operator of the run its peer), as ``METHOD+kauto`` does.
Ends with a Markdown table of the mean R^2 per method and k. (A run trained with ``horizons``
scores its expansions itself, as ``METHOD+kK`` entries of results.json.)
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

import numpy as np

import resolvent
from resolvent.algorithms import onestep as onestep_model
from resolvent.algorithms.horizon import find_stretches
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.evaluation.metrics import rel_rmse, spearman
from resolvent.experiments import EvaluateConfig, RunDir, run_evaluate
from resolvent.experiments.evaluate import dataset_source, family_source
from resolvent.experiments.policy_refs import fit_data_model
from resolvent.experiments.problem import input_stats
from resolvent.io import atomic_savez
from resolvent.model import AUTO

TINY = dict(onestep=OneStepConfig(hidden=(16,), steps=20),
            m=16, n_initial=4, n_train_rewards=8, n_test_rewards=2, hidden=(16,), features=8, gt_tol=1e-3,
            sf_fit_points=512, sf_generic_basis=8, eval_points=("reset",), ref_pool=256, random_features=16,
            horizons=(2,))


def onestep_of(run_dir: str, methods: list[str]):
    """The run's one-step model: from the first saved model that holds one."""
    for m in methods:
        model = resolvent.load(run_dir, m)
        if model.onestep is not None and model.onestep.low is None:   # saved before it kept the data's range:
            pool = np.asarray(model.xi_features["obs"])                # the reference pool's (the data's states)
            return model.onestep._replace(low=pool.min(0), high=pool.max(0))
        if model.onestep is not None:
            return model.onestep
    raise SystemExit(f"{run_dir} has no model with a one-step model (train favor, fb or pi-attention)")


def refit_onestep(cfg: EvaluateConfig, src, steps: int, ensemble: int | None = None) -> onestep_model.OneStepModel:
    """The run's one-step model fitted again on its data with ``steps`` Adam steps (its seed and
    the rest of its config, today's defaults where it has none; ``ensemble`` members, None: the
    config's): what the model changes, without retraining the operators."""
    data = src.data
    x_mean, x_std = input_stats(np.concatenate([data["obs"], data["action"]], -1))
    ensemble = ensemble or cfg.onestep.ensemble
    return fit_data_model(dataclasses.replace(cfg.onestep, steps=steps, ensemble=ensemble,
                                              keep=min(cfg.onestep.keep, ensemble)), cfg.seed,
                          {k: data[k] for k in src.spec.feature_keys}, x_mean, x_std)


def bench(run_dir: str, methods: list[str] | None, horizons: list, points: str | None = None,
          onestep_steps: int | None = None, ensemble: int | None = None,
          keeps: tuple[int, ...] | None = None, onestep_file: str | None = None,
          answers: dict | None = None) -> list[dict]:
    """One row per method, horizon (an int, or "auto": chosen per reward, ``algorithms/horizon.py``,
    the run's other operators its peers), reward set and kind of points; ``answers`` (if given)
    gets every prediction and truth, (R, n) each."""
    cfg = EvaluateConfig.from_dict(RunDir(run_dir).read_config())
    if points:   # other evaluation points than the run's own (a run made before they existed)
        cfg = dataclasses.replace(cfg, eval_points=tuple(points.split(",")))
    src = family_source(cfg) if cfg.data is None else dataset_source(cfg)
    methods = methods or [m for m in cfg.methods if m != "fqe"]
    if onestep_file and Path(onestep_file).is_file():
        with np.load(onestep_file) as z:
            onestep = onestep_model.from_arrays({k: z[k] for k in z.files})
    elif onestep_steps:
        onestep = refit_onestep(cfg, src, onestep_steps, ensemble)
        if onestep_file:
            atomic_savez(onestep_file, **onestep_model.to_arrays(onestep))
    else:
        onestep = onestep_of(run_dir, [m for m in cfg.methods if m != "fqe"])
    keeps = keeps or (onestep.keep,)   # the model's own
    fixed = [k for k in horizons if k != AUTO]
    if AUTO in horizons:   # the choice per reward: every other operator of the run as peer (a single model:
        stretches = (find_stretches({k: np.asarray(src.data[k]) for k in src.spec.feature_keys}, max(fixed),
                                    cfg.stretches or 256, cfg.seed)            # checked along the data's stretches)
                     if any(onestep._replace(keep=k).kept <= 1 for k in keeps) else None)
        everyone = {m: resolvent.load(run_dir, m) for m in cfg.methods if m != "fqe"}
    rows = []
    for method, keep in ((m, x) for m in methods for x in keeps):
        model = resolvent.load(run_dir, method)
        model.onestep = onestep._replace(keep=keep)
        if AUTO in horizons:
            model.horizons, model.stretches = tuple(k for k in fixed if k), stretches
            model.peers = tuple(m for name, m in everyone.items() if name != method)
        label = f"{method}+keep{keep}" if len(keeps) > 1 else method
        for kind, gt in src.points.items():
            if max(fixed):   # one rollout of the longest horizon: every shorter one is its prefix
                model.expansion(gt.obs0, gt.action0, max(fixed))
            for s in ("train", "test", "probe") if cfg.data is not None else ("test", "probe"):
                rewards = src.rewards.get(s, [])
                if not rewards:
                    continue
                truth = np.stack([gt.q(r) for _, r in rewards])                      # (R, n)
                for k in horizons:
                    pred = np.stack([model.q_values(r, gt.obs0, gt.action0, seed=None, horizon=k).mean(0)
                                     for _, r in rewards])                           # (R, n)
                    if answers is not None:
                        answers[f"{label}|k{k}|{s}|{kind}"], answers[f"truth|{s}|{kind}"] = pred, truth
                    mse = ((pred - truth) ** 2).mean(1)                                 # (R,)
                    r2 = 1 - mse / np.maximum(truth.var(1), 1e-8)
                    worst = int(np.argmin(r2))
                    rows.append({"method": label, "horizon": k, "set": s, "points": kind,
                                 "r2": round(float(r2.mean()), 4), "worst_r2": round(float(r2[worst]), 4),
                                 "worst": rewards[worst][0],
                                 "rel_rmse": round(float(rel_rmse(pred[None], truth).mean()), 4),
                                 "spearman": round(float(spearman(pred[None], truth[None]).mean()), 4),
                                 "mse": {name: round(float(v), 6) for (name, _), v in zip(rewards, mse)}})
                    print(json.dumps(rows[-1]), flush=True)
    return rows


def table(rows: list[dict]) -> str:
    """Mean R^2 per method and horizon: every reward set at every point kind."""
    order = {"train": 0, "test": 1, "probe": 2}
    cols = sorted({(r["set"], r["points"]) for r in rows}, key=lambda c: (order[c[0]], c[1]))
    lines = ["| method | k | " + " | ".join(f"{s} R^2 ({p})" for s, p in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for method, k in dict.fromkeys((r["method"], r["horizon"]) for r in rows):
        got = {(r["set"], r["points"]): r for r in rows if r["method"] == method and r["horizon"] == k}
        lines.append(f"| {method} | {k} | " + " | ".join(
            f"{got[c]['r2']:.2f} (worst {got[c]['worst_r2']:.2f})" if c in got else "-" for c in cols) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", nargs="?", default=None, help="a finished evaluate run")
    ap.add_argument("--methods", default=None, help="comma-separated [default: the run's operators]")
    ap.add_argument("--horizons", default="0,10,30,60,150,400",
                    help="comma-separated k; 'auto': chosen per reward among the others")
    ap.add_argument("--points", default=None, help="point kinds, comma-separated [default: the run's]")
    ap.add_argument("--onestep-steps", type=int, default=None,
                    help="refit the run's one-step model with this many Adam steps [default: the saved model]")
    ap.add_argument("--ensemble", type=int, default=None, help="members of the refitted model [default: the config's]")
    ap.add_argument("--keep", default=None,
                    help="comma-separated: answer by the mean of this many members per point, those whose "
                         "rollouts lie closest to the others', one model fitted for all (0: all) [default: the "
                         "config's]")
    ap.add_argument("--onestep-file", default=None,
                    help="an .npz that keeps the refitted model: read where it exists, else written")
    ap.add_argument("--out", default=None, help="also write the JSON lines here")
    ap.add_argument("--predictions", default=None, help="write every answer and its truth to this .npz")
    ap.add_argument("--tiny", action="store_true", help="smoke sizes: trains a tiny run, checks the script")
    args = ap.parse_args()
    horizons = [k if k == AUTO else int(k) for k in args.horizons.split(",")]
    methods = args.methods.split(",") if args.methods else None
    keeps = tuple(int(x) for x in args.keep.split(",")) if args.keep else None
    answers = {} if args.predictions else None
    if keeps and not args.onestep_steps:
        ap.error("--keep needs a refitted ensemble: --onestep-steps N [--ensemble E]")
    if args.tiny:
        with tempfile.TemporaryDirectory(prefix="expansion-") as run_dir:
            cfg = EvaluateConfig(family="pendulum-angle", methods=("favor", "fb"), seeds=1, steps=20,
                                 log_every=10, checkpoint_every=20, trust="off", **TINY)
            run_evaluate(cfg, run_dir, plot=False)
            rows = bench(run_dir, methods, [0, 2, AUTO], onestep_steps=args.onestep_steps, ensemble=args.ensemble,
                         keeps=keeps, onestep_file=args.onestep_file, answers=answers)
    else:
        if args.run is None:
            ap.error("give a run directory, or --tiny")
        rows = bench(args.run, methods, horizons, args.points, args.onestep_steps, args.ensemble, keeps,
                     args.onestep_file, answers)
    if args.out:
        with open(args.out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    if args.predictions:
        atomic_savez(args.predictions, **answers)
    print(table(rows))


if __name__ == "__main__":
    main()
