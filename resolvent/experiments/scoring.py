"""Scoring an evaluate run's answers: every metric per seed, reward set and point kind
(``score``), a method's results.json entry (``entry_of``), the rows of ``metrics.jsonl``
(``metric_rows``) and ``predictions.npz`` (``save_predictions``)."""
from __future__ import annotations

import numpy as np

from resolvent.evaluation.metrics import bellman_residual, score_points
from resolvent.experiments.problem import Problem
from resolvent.experiments.rundir import RunDir
from resolvent.io import atomic_savez

PREFIX = {"reset": "", "trajectory": "traj_", "dataset": "data_"}   # metric keys per point kind


def score(pred: dict, p: Problem) -> dict:
    """Every metric (``resolvent.evaluation.metrics``) per seed of each reward set at each point
    kind where it has truth: {"test_mse": (S,), "test_r2": (S,), "test_rel_rmse": (S,), ...} at
    the reset points, ``traj_test_r2``, ``data_test_r2``, ... at the others, ``trust_r2``, ...
    of the held-out rewards against per-reward FQE and ``trust_bellman``, their Bellman residual on
    the trust report's transitions (no truth needed); per probe reward ``probe_r2_each`` (P, S),
    per held-out reward ``trust_r2_each``, ``trust_rel_rmse_each``, ``trust_bellman_each`` (H, S)."""
    out = {}
    for s, q in pred.items():                                              # q (S, R, n_all)
        split = p.split(q)
        if s == "heldout" and p.trust is not None:
            t = p.trust
            each = bellman_residual(split["trust"], t.rewards, split["trust_next"], t.done, t.gamma, t.scale)  # (S, H)
            out.update(trust_bellman=each.mean(1), trust_bellman_each=each.T)
        for kind, qk in split.items():                                     # qk (S, R, n_k)
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



def entry_of(scores: dict, p: Problem) -> dict:
    """``score``'s metrics as a method's results.json entry (lists over seeds; per reward by name)."""
    entry = {k: [float(v) for v in scores[k]] for k in scores if not k.endswith("_each")}
    for key, s in (("probe_r2_each", "probe"), ("trust_r2_each", "heldout"), ("trust_rel_rmse_each", "heldout"),
                   ("trust_bellman_each", "heldout")):
        if key in scores:
            entry[key] = {n: [float(v) for v in row] for n, row in zip(p.sets[s].names, scores[key])}
    return entry


def metric_rows(name: str, seed_ids, step: int, scores: dict, loss, seconds: float) -> list[dict]:
    keys = [k for k in scores if not k.endswith("_each")]
    return [{"method": name, "seed": int(s), "step": step,
             **{k: float(scores[k][i]) for k in keys},
             "loss": None if loss is None else float(loss[i]), "seconds": round(seconds, 3)}
            for i, s in enumerate(seed_ids)]



def save_predictions(run: RunDir, answers: dict[str, dict], p: Problem) -> None:
    """Methods' final answers (``answers``: method -> its answers per reward set; mean over
    seeds) beside the truth, per reward set and point kind, into ``predictions.npz``
    (``METHOD|SET|KIND|pred`` and ``...|truth``, (R, n_k)), read and written once for them all:
    the scatter plot reads it."""
    path = run.path / "predictions.npz"
    arrays = {}
    if path.is_file():
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files if k.split("|")[0] not in answers}
    for name, pred in answers.items():
        for s, q in pred.items():                                          # (S, R, n_all)
            for kind, qk in p.split(q).items():
                truth = p.sets[s].truth.get(kind)
                if truth is not None:
                    arrays[f"{name}|{s}|{kind}|pred"] = np.asarray(qk).mean(0)
                    arrays[f"{name}|{s}|{kind}|truth"] = np.asarray(truth)
    if arrays:
        atomic_savez(path, **arrays)

