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

The pieces, one idea a module: ``evaluate_config`` (the config, presets), ``sources`` (data,
target policy, rewards), ``problem`` (what the methods share), ``methods`` (the method factory),
``scoring`` (metrics, predictions); this module is the runner's glue and re-exports their names.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from resolvent.algorithms import distil
from resolvent.algorithms.bank import Bank, bank_starts
from resolvent.algorithms.distil import DistilData, target_weights
from resolvent.algorithms.expansion import Rollouts, along_q
from resolvent.algorithms.horizon import find_stretches, point_spread
from resolvent.data import KINDS
from resolvent.evaluation.support import ActionSupport, build_support
from resolvent.experiments.evaluate_config import (ABSORBING, AUTO_CANDIDATES, DEFAULT_METHODS, METHODS,
                                                   OPERATORS, PRESET_METHODS, PRESETS, REF_ACTIONS, TRUST,
                                                   EvaluateConfig, default_fqe, paper_fqe)
from resolvent.experiments.methods import (Method, fqe_oracle, inference_model, make_method, oracle_set,
                                           policy_method, run_fqe, sf_basis)
from resolvent.experiments.plots import plot_evaluate
from resolvent.experiments.policy_refs import first_step_values
from resolvent.experiments.problem import (SETS, Problem, RewardSet, prepare, reference_features,
                                           reward_set)
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.runner import run_experiment, train_loop
from resolvent.experiments.scoring import PREFIX, entry_of, metric_rows, save_predictions, score
from resolvent.experiments.sources import (Rewards, Source, check_same_policy, dataset_source, family_source,
                                           policy_fingerprint)
from resolvent.experiments.trust import choose_method, train_oracle, with_bank, with_partners
from resolvent.keys import name_id, named_key
from resolvent.model import AUTO, OperatorModel, save_bank, save_stretches, save_support, split_method
from resolvent.rewards import generic_rewards


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
    pred = method.predict(state.params)
    scores = last.get("scores") or score(pred, p)
    save_predictions(run, {name: pred}, p)
    entry = entry_of(scores, p)
    if last.get("loss") is not None:
        entry["loss"] = [float(v) for v in last["loss"]]
    return {**entry, "steps": step, "seconds": round(seconds, 2)}


def expansion_entries(cfg: EvaluateConfig, p: Problem, run: RunDir, methods: dict) -> tuple[dict, dict]:
    """The model-based expansions (``algorithms/expansion.py``) of every trained operator, scored
    like a method, and the answers of the fixed and chosen horizons ({name: {set: (S, R, n)}}, for
    ``mean_entry``): ``METHOD+kK`` -> its results.json entry, for each K in ``cfg.horizons``,
    ``METHOD+kauto``, K chosen per reward and kind of points (``algorithms/horizon.py``; its choices
    in ``horizon_each``) where the run has two or more operators and the one-step model an ensemble
    (a single model: where the data has stretches), and
    ``METHOD+dK`` for each operator of the policy encoding where ``cfg.distil.horizon`` = K: G_K
    distilled into it (``distil_operator``), saved as the model ``METHOD+dK``, and
    ``METHOD+dK+kk`` for each k in ``cfg.horizons``: G_k with the student as its tail (a k-step
    rollout at new points where G_K needs K; not one of auto's candidates), and, where the bank
    resolves to P > 0 states (``BankConfig.resolve``: by default 2048 under auto), ``METHOD+bK+kk``
    (K = ``cfg.bank.horizon``): G_k with the data's bank as its tail (``algorithms/bank.py``; its
    starting states saved beside the models; not one of auto's candidates, but a replacement for
    its pick, ``trust.with_bank``). The run's
    one-step model (fitted for the policy encoding) and target policy serve every operator, and one
    rollout of the longest horizon serves every operator and horizon (``Rollouts``)."""
    bank_cfg = cfg.bank.resolve(cfg.auto, len(p.features["obs"]))
    if not (cfg.horizons or cfg.distil.horizon or bank_cfg.points) or p.pi is None or p.y is None:
        return {}, {}
    obs, act = p.raw_points()                                              # every point
    rollouts, models = Rollouts(), {}
    for name in (m for m in cfg.methods if m != "fqe" and m in methods):
        models[name] = p.expansion_model(run.path / "models", name, rollouts)
    first, *others = models.values() if models else (None,)
    # an ensemble checks itself; a single model is checked along the data's stretches
    stretches = (find_stretches(p.features, max(cfg.horizons), cfg.stretches, cfg.seed)
                 if cfg.stretches and cfg.horizons and others and not first.spread_checks() else None)
    if stretches is not None:
        save_stretches(stretches, run.path / "models")

    def entry(pred: dict, name: str, horizon) -> dict:
        return {**entry_of(score(pred, p), p), "steps": methods[name]["steps"],
                "seconds": methods[name]["seconds"], "horizon": horizon}

    chooser = None
    if first is not None:
        # k*(r) is the same for every operator: e_model is the one-step model's and e_op the spread
        # of all the run's operators, so one of them chooses for all
        first.horizons, first.stretches, first.peers = tuple(cfg.horizons), stretches, tuple(others)
        chooser = first if first.can_choose() else None
    answers, chosen = expansion_answers(models, p, obs, act, cfg.horizons, chooser)
    out, saved = {}, {}
    for name in models:
        for k in sorted(cfg.horizons):
            saved[f"{name}+k{k}"] = answers[name][k]
            out[f"{name}+k{k}"] = entry(answers[name][k], name, k)
        if chosen:
            saved[f"{name}+kauto"] = answers[name][AUTO]
            out[f"{name}+kauto"] = {**entry(answers[name][AUTO], name, AUTO), "horizon_each": chosen}
    if saved:
        save_predictions(run, saved, p)
    for name, model in models.items():
        if cfg.distil.horizon and model.scored_under_policy:
            t0 = time.perf_counter()
            student, losses = distil_operator(cfg, p, model)
            label = f"{name}+d{cfg.distil.horizon}"
            student.save(run.path / "models", label)
            pred = set_answers(student, p, obs, act)
            out[label] = {**entry(pred, name, 0), "distil_seconds": round(time.perf_counter() - t0, 2),
                          "distil_loss": [float(v) for v in losses[:, -100:].mean(1)]}
            tails = {f"{label}+k{k}": q for k, q in horizon_answers(student, p, obs, act, cfg.horizons).items()}
            out.update({tail: entry(q, name, split_method(tail)[1]) for tail, q in tails.items()})
            save_predictions(run, {label: pred, **tails}, p)
    policy_models = {name: m for name, m in models.items() if m.scored_under_policy}
    if bank_cfg.points and cfg.horizons and policy_models:
        t0 = time.perf_counter()
        bank = Bank(bank_cfg, bank_starts(p.features, bank_cfg, name_id(f"{cfg.seed}-bank")))
        save_bank(bank, run.path / "models")
        bank.build(p.pi.model, p.source.policy)
        built = round(time.perf_counter() - t0, 2)
        # G_K's spread (K the bank's) is the one-step members', read by no operator: one for all of them
        spread = (trust_spread(next(iter(policy_models.values())), p, obs, act, bank_cfg.horizon)
                  if bank_cfg.horizon in cfg.horizons else None)
        for name, model in policy_models.items():
            g_k = answers[name].get(bank_cfg.horizon)                  # G_K, K the bank's: what the bank stands in for
            if spread is not None:
                out[f"{name}+k{bank_cfg.horizon}"]["trust_spread_each"] = spread
            model.bank = bank
            tails = {f"{name}+b{bank_cfg.horizon}+k{k}": q
                     for k, q in horizon_answers(model, p, obs, act, cfg.horizons).items()}
            model.bank = None
            out.update({tail: {**entry(q, name, split_method(tail)[1]), "bank_seconds": built, "bank_states": len(bank),
                               **({"trust_gap_each": trust_gaps(q, g_k, p)} if spread is not None else {})}
                        for tail, q in tails.items()})
            save_predictions(run, tails, p)
    return out, saved


def mean_entry(choice: dict, p: Problem, run: RunDir, methods: dict, answers: dict) -> dict:
    """The results.json entry of auto's mean of answers (``trust.with_partners``, named by them):
    the mean of its answers' (``answers``, {name: {set: (S, R, n)}}), scored like a method, their
    choices of horizon (kauto) and their members kept; saved with the answers
    (predictions.npz)."""
    names = (choice["alone"], *choice["partners"])
    q = {s: np.mean([answers[m][s] for m in names], 0) for s in answers[names[0]]}     # {set: (S, R, n)}
    save_predictions(run, {choice["chosen"]: q}, p)
    first = methods[names[0]]
    return {**entry_of(score(q, p), p), "steps": first["steps"], "seconds": round(sum(methods[m]["seconds"]
            for m in names), 2), "horizon": first["horizon"], "members": list(names),
            **({"horizon_each": first["horizon_each"]} if "horizon_each" in first else {})}


def trust_spread(model: OperatorModel, p: Problem, obs, act, horizon: int) -> dict | None:
    """G_K's spread among its kept ensemble members at the trust report's points, per held-out
    reward ({name: [sd]}, one value for every network seed and operator: the sums read none): the root
    of the mean over the points of the members' weighted variance of their K-step discounted sums
    (``horizon.point_spread``), the one-step model's own uncertainty of G_K there. None without
    the trust report or an ensemble (a single model has no spread)."""
    if "trust" not in p.slices or not len(p.sets["heldout"]) or not model.spread_checks():
        return None
    cols, ex = np.arange(len(obs))[p.slices["trust"]], model.expansion(obs, act, horizon)
    return {name: [float(np.sqrt(point_spread(ex, reward, [horizon], model.gamma, cols)[0].mean()))]
            for name, (_, reward) in zip(p.sets["heldout"].names, p.source.rewards["heldout"])}


def trust_gaps(banked: dict, g_k: dict, p: Problem) -> dict:
    """A bank answer's RMS difference from its operator's G_K at the trust report's points, per
    held-out reward and seed ({name: [per seed]}): how far the bank departs from the rollout it
    stands in for (``trust.with_bank`` weighs it against G_K's spread, ``trust_spread``)."""
    cols = p.slices["trust"]
    gap = np.sqrt(((banked["heldout"][..., cols] - g_k["heldout"][..., cols]) ** 2).mean(-1))   # (S, H)
    return {name: [float(v) for v in gap[:, j]] for j, name in enumerate(p.sets["heldout"].names)}


def horizon_answers(model: OperatorModel, p: Problem, obs, act, horizons) -> dict[int, dict]:
    """G_k's answers at the points for each k of ``horizons``, {k: {set: (S, R, n)}}, reward by
    reward and the longest horizon first: what a reward's answer keeps (its values along the
    shared rollout, along the bank) serves every horizon."""
    fixed = sorted(horizons, reverse=True)
    out: dict = {k: {} for k in fixed}
    for s in (s for s in SETS if len(p.sets[s])):
        per = [[model.q_values(r, obs, act, seed=None, horizon=k) for k in fixed] for _, r in p.source.rewards[s]]
        for j, k in enumerate(fixed):
            out[k][s] = np.stack([q[j] for q in per], 1)                               # (S, R, n)
    return out


def expansion_answers(models: dict[str, OperatorModel], p: Problem, obs, act, horizons,
                      chooser: OperatorModel | None) -> tuple[dict, dict]:
    """Every operator's answers at the points (obs, act), {name: {k: {set: (S, R, n)}}}, for each k
    of ``horizons`` and, with a ``chooser`` (a model that can choose, ``OperatorModel.can_choose``),
    "auto": each reward at its own k for each kind of points (``Problem.points``: a user asking at
    their reset states and at their dataset's states asks twice), chosen once for every operator
    ({set: {reward name: {kind: k}}}, returned beside). Reward by reward, the longest horizon
    first: the models share one rollout (``Rollouts``), which keeps the last reward evaluated
    along it, so a reward is evaluated along the rollout once for every operator, horizon and
    choice."""
    fixed = sorted(horizons, reverse=True)
    kinds = [*fixed, *([AUTO] if chooser is not None else [])]
    groups = p.slices                                                          # kind -> its rows of obs
    answers = {name: {k: {} for k in kinds} for name in models}
    chosen: dict = {}
    for s in (s for s in SETS if len(p.sets[s])):
        got = {(name, k): [] for name in models for k in kinds}
        for r_name, r in p.source.rewards[s]:
            each = (dict(zip(groups, chooser.choose_horizons(r, obs, act, list(groups.values()))))
                    if chooser is not None else {})
            if each:
                chosen.setdefault(s, {})[r_name] = each
            for name, model in models.items():
                at = {k: model.q_values(r, obs, act, seed=None, horizon=k) for k in fixed}      # k -> (S, n)
                for k in fixed:
                    got[name, k].append(at[k])
                if each:
                    if 0 in each.values():           # "auto" chose the operator alone somewhere
                        at[0] = model.q_values(r, obs, act, seed=None, horizon=0)
                    q = np.empty_like(at[fixed[0]])
                    for kind, g in groups.items():
                        q[..., g] = at[each[kind]][..., g]
                    got[name, AUTO].append(q)
        for (name, k), q in got.items():
            answers[name][k][s] = np.stack(q, 1)                                       # (S, R, n)
    return answers, chosen


def set_answers(model: OperatorModel, p: Problem, obs, act, horizon: int = 0) -> dict:
    """Every reward set's answers at the points (obs, act) at one horizon: {set: (S, R, n)}."""
    return horizon_answers(model, p, obs, act, [horizon])[horizon]


def distil_operator(cfg: EvaluateConfig, p: Problem, model: OperatorModel) -> tuple[OperatorModel, np.ndarray]:
    """The operator ``model`` distilled from its expansion G_K, K = ``cfg.distil.horizon``
    (``algorithms/distil.py``): the targets at ``cfg.distil.points`` state-actions of the data (and,
    with ``distil.along``, at the kept members' rollout states from them) for the family's training
    rewards and ``cfg.distil.rewards`` generic draws of the prior, every network seed its own.
    With ``distil.kernel_heads``, a kernel operator's student starts as the teacher widened to that
    many kernels (``OperatorModel.widened``); fb's keeps its size.
    Returns the student (the same network, horizon 0) and its losses (S, steps)."""
    data = distil_data(cfg, p, model)
    wide = cfg.distil.kernel_heads and model.has_kernels
    start = model.widened(cfg.distil.kernel_heads, named_key(cfg.seed, model.method, "widen")) if wide else model
    params, losses = distil.train(start.params, start.network, cfg.distil, data,
                                  named_key(cfg.seed, model.method, "distil"))
    student = dataclasses.replace(start, params=jax.device_get(params), horizon=0)
    return student, np.asarray(losses)


def distil_data(cfg: EvaluateConfig, p: Problem, model: OperatorModel) -> DistilData:
    """What ``distil_operator`` trains the student on: the points, G_K's targets there for the
    family's training rewards and the prior's draws (``distil_targets``), the reference pool and
    the rewards' values on it."""
    d, horizon = cfg.distil, cfg.distil.horizon
    rewards = [r for _, r in p.source.rewards["train"]] if cfg.prior.family else []
    if cfg.prior.generic:
        rewards += generic_rewards(cfg.prior, named_key(cfg.seed, "distil-rewards"), p.prior_stats, p.z_raw, d.rewards)
    at = np.sort(np.random.default_rng(name_id(f"{cfg.seed}-distil-points")).choice(
        len(p.features["obs"]), min(d.points, len(p.features["obs"])), replace=False))
    obs, act = np.asarray(p.features["obs"])[at], np.asarray(p.features["action"])[at]      # (P, ds) (P, da)
    steps = (0, *range(d.along_every, d.along + 1, d.along_every)) if d.along else (0,)
    x_obs, x_act, g = distil_targets(model, obs, act, rewards, horizon, steps, cfg.gamma)   # (P', .) (R, S, P')
    first = np.asarray(first_step_values(model.onestep, list(enumerate(rewards)), x_obs, x_act,
                                         "distillation points"))                      # (R, P')
    u = jnp.asarray(((g - first[:, None]) / cfg.gamma).transpose(1, 0, 2), jnp.float32)   # (S, R, P')
    return DistilData(x=model.normalise(x_obs, x_act), u=u, ref_x=model.xi, ref_r=model.encode(rewards),
                      weight=target_weights(u))


def distil_targets(model: OperatorModel, obs: np.ndarray, act: np.ndarray, rewards: list, horizon: int,
                   steps: tuple[int, ...], gamma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distillation's points and the expansion's answers there: the P query points (obs, act),
    then for each t > 0 of ``steps`` every kept member's rollout state x_t = (s_t, pi(s_t)) from
    them (member-major, as one rollout orders them); at the points G_K[r] itself, at x_t the rest
    of the same rollout, G_{K-t}[r] (``along_q``). Made part by part of the points where one
    rollout would exceed ``model.rollouts.budget`` (``Rollouts.parts``), every part's rollout made,
    answered for every reward and dropped: the same points and values as one rollout. Returns the
    points (P', ds), (P', da) and the answers (R, S, P')."""
    parts = model.rollouts.parts(model.onestep, obs, act, horizon)
    n, x, where, g = len(obs), {t: ([], []) for t in steps}, {t: [] for t in steps}, []
    for i, part in enumerate(parts):
        ex = model.expansion(obs[part], act[part], horizon)
        e, size = ex.weights.shape                                                      # E, n'
        row = (np.arange(e)[:, None] * n + part.start + np.arange(size)).reshape(-1)    # (E n',) as one rollout's
        kept = {t: (ex.weights.reshape(-1) > 0) & (ex.alive[t] > 0.5) for t in steps[1:]}     # (E n',) each
        x[0][0].append(obs[part])
        x[0][1].append(act[part])
        where[0].append(row[:size])
        for t, m in kept.items():
            x[t][0].append(ex.steps["obs"][t][m])
            x[t][1].append(ex.steps["action"][t][m])
            where[t].append(row[m])
        desc = f"{model.method}+d{horizon} targets" + (f" (part {i + 1} of {len(parts)})" if len(parts) > 1 else "")
        answers = []
        for r in tqdm(rewards, desc=desc, leave=False):
            q = along_q(ex, r, lambda s, a, r=r: model.q_values(r, s, a, seed=None, horizon=0), gamma, steps)
            answers.append([ex.member_mean(q[:, 0]), *(q[:, j][:, m] for j, m in enumerate(kept.values(), 1))])
        g.append(answers)              # [R][T] of (S, n') at the points, (S, kept) along
        del ex                         # so that model.rollouts drops this part's rollout before making the next
    order = {t: np.argsort(np.concatenate(where[t]), kind="stable") for t in steps}    # one rollout's order
    x_obs = np.concatenate([np.concatenate(x[t][0])[order[t]] for t in steps])      # (P', ds)
    x_act = np.concatenate([np.concatenate(x[t][1])[order[t]] for t in steps])      # (P', da)
    answer = np.stack([np.concatenate([np.concatenate([part[i][j] for part in g], -1)[:, order[t]]
                                       for j, t in enumerate(steps)], -1)
                       for i in range(len(rewards))])                                  # (R, S, P')
    return x_obs, x_act, answer


def run_evaluate(cfg: EvaluateConfig, out: str | Path, resume: bool = False, plot: bool = True,
                 source: Source | None = None) -> dict:
    """Run (or resume) an experiment into ``out``; returns results.json's content (the shared
    runner, ``run_experiment``). ``source`` overrides what ``cfg`` names (a dataset object, a
    policy or rewards given in Python)."""
    def header(cfg: EvaluateConfig, p: Problem, run: RunDir) -> dict:
        check_same_policy(run, p.source.fingerprint)
        p.prior_stats.save(run.path / "prior.npz")     # derived from the data: rewritten, never trusted
        oracle = trust_truth(cfg, p, run) if cfg.trust_report else {}
        support = data_support(cfg, p.features["obs"], p.features["action"], p.x_std)
        save_support(support, run.path / "models")   # derived from the data: rewritten, never trusted
        return {"family": cfg.family, "dataset": cfg.dataset if cfg.data is None else cfg.data,
                "task": "evaluate", "ground_truth": p.has_truth, "train_rewards": p.sets["train"].names,
                "reward_prior": cfg.prior.kind, "probes": p.sets["probe"].names,
                "eval_points": {k: len(v) for k, v in p.points.items()},
                "support": support_entry(support, p),
                **({"heldout_rewards": p.sets["heldout"].names} if cfg.trust_report else {}),
                **({"trust_oracle": oracle} if oracle else {}),
                **({"policy_fingerprint": p.source.fingerprint} if p.source.fingerprint else {})}

    def finish(cfg: EvaluateConfig, p: Problem, results: dict) -> dict:
        base = {m: r for m, r in results["methods"].items() if not split_method(m)[1]}
        expansions, answers = expansion_entries(cfg, p, RunDir(out), base)
        methods = {**base, **expansions}
        # auto: its candidates' answers; a run of named operators with the trust report: theirs, the
        # same rule's pick its default answer (``resolvent.default_method``, where no ground truth ranks them)
        pool = AUTO_CANDIDATES if cfg.auto else cfg.methods
        candidates = tuple(m for m in methods if m != "fqe" and split_method(m)[0] in pool)
        if not cfg.auto and not any("trust_rel_rmse_each" in methods[m] for m in candidates):
            return {"methods": methods}
        choice = with_partners(with_bank(methods, choose_method(methods, candidates, cfg.auto_tie), cfg.auto_tie),
                               cfg.auto_tie)
        if "partners" in choice:            # the pick averaged with its tied partners: scored as an answer
            methods[choice["chosen"]] = mean_entry(choice, p, RunDir(out), methods, answers)
        return {"methods": methods, "auto" if cfg.auto else "trusted": choice}

    return run_experiment(cfg, EvaluateConfig, out, resume, lambda c: prepare(c, source), header, run_method,
                          plot_evaluate if plot else None, finish)


def data_support(cfg: EvaluateConfig, obs: np.ndarray, actions: np.ndarray, x_std: np.ndarray) -> ActionSupport:
    """The run's action-support check (``evaluation/support.py``): a sample of the data's states
    ``obs`` (N, ds) and ``actions`` (N, da), in the networks' state unit (``x_std`` (ds + da,), the
    state-action scale), its scales the data's own; the sample drawn from the run's seed."""
    return build_support(obs, actions, x_std[:obs.shape[1]], cfg.support, name_id(f"{cfg.seed}-support"))


def support_entry(support: ActionSupport, p: Problem) -> dict:
    """results.json's ``support``: the check's scales and threshold, and at each kind of evaluation
    points rho = d_K / T (n_k,) and the points over it."""
    ds = p.features["obs"].shape[1]
    kinds = {}
    for kind, raw in p.raw.items():
        obs = np.asarray(raw[:, :ds], np.float32)
        c = support.check(obs, np.asarray(p.source.policy(obs)))
        kinds[kind] = {"relative": [round(float(v), 4) for v in c.relative],
                       "unsupported": [int(i) for i in np.flatnonzero(c.unsupported)]}
    return {"threshold": support.threshold, "median": support.unit, "action_spread": support.action_spread,
            "ratio": support.ratio, "spread": support.spread, "neighbours": support.neighbours,
            "sample": len(support.obs), "kinds": kinds}


def trust_truth(cfg: EvaluateConfig, p: Problem, run: RunDir) -> dict:
    """The trust report's truth: per-reward FQE (one seed) on the held-out rewards, its answer at
    the trust points stored as their ``trust`` truth. Returns the oracle's own Bellman residual on
    the trust transitions (``trust_bellman``) and, where Monte-Carlo truth exists, its accuracy
    (``data_heldout_r2``, ...)."""
    oracle = fqe_oracle(cfg, p, p.xi, answers="heldout")
    params = train_oracle(run, oracle, cfg.seed, cfg.steps, cfg.log_every, cfg.checkpoint_every)
    q = oracle.predict(params)["heldout"]                                  # (1, H, n_all)
    own = {k: float(v[0]) for k, v in score({"heldout": q}, p).items() if not k.endswith("_each")}
    p.sets["heldout"].truth["trust"] = p.split(q[0])["trust"]              # (H, n_trust)
    return own



__all__ = ["ABSORBING", "AUTO_CANDIDATES", "DEFAULT_METHODS", "KINDS", "METHODS", "OPERATORS", "PREFIX", "PRESETS",
           "PRESET_METHODS", "REF_ACTIONS", "SETS", "TRUST", "EvaluateConfig", "Method", "Problem", "RewardSet",
           "Rewards", "Source", "check_same_policy", "data_support", "dataset_source", "default_fqe", "entry_of",
           "expansion_entries", "family_source", "fqe_oracle", "inference_model", "make_method", "mean_entry",
           "metric_rows", "named_key", "oracle_set", "paper_fqe", "policy_fingerprint", "policy_method", "prepare",
           "reference_features", "reward_set", "run_evaluate", "run_fqe", "run_method", "save_predictions", "score",
           "sf_basis", "support_entry", "trust_gaps", "trust_spread", "trust_truth"]
