"""Time to an answer for one new reward: every trained operator of a run (zero-shot) against FQE.

    python benchmarks/zero_shot.py [--run RUN_DIR] [--family pendulum-angle] [--dataset expert]
        [--methods favor,fb,sf,attention] [--steps 15000] [--fqe-steps 100000] [--fqe-budget S] [--oracle dope]
        [--fqe-log FILE]
        [--pairs 10000]
        [--horizons 10,30,60] [--cycle 0,1e-4] [--distil 400] [--repeats 5] [--tiny]

With ``--run`` (a finished ``resolvent evaluate`` run) its operators are used, every method of
the run but the FQE oracle (or ``--methods`` of them); otherwise ``--methods`` are trained here
with the default configuration (1 seed, ``--steps``). For one new reward (a test member of the
family, drawn from the test range), one JSON line per method, for network seed 0 on ``--pairs``
state-action pairs of the dataset, warm (the median of ``--repeats`` after one call):

- ``encode_ms``: the reward's encoding (its values at the reference points; SF: its ridge
  weights on the fit points); ``forward_ms``: the network's forward pass alone on the pairs;
  ``answer_ms``: both, the whole answer ``model.q_values`` gives;
- ``mse``: the method's MSE for that reward at the ground-truth initial points;
- ``fqe_seconds``, ``fqe_steps``: the per-reward FQE oracle (same data; the run's recipe, or
  ``--oracle dope``: DOPE's, ``EvaluateConfig.oracle``; named in ``oracle``), trained on that
  reward alone and scored every ``--fqe-chunk`` steps, until its MSE is at most the method's
  (``reached``; else the whole ``--fqe-steps`` or ``--fqe-budget`` seconds, and ``ratio`` is a
  lower bound); ``fqe_best_mse`` the lowest MSE it reached; ``--fqe-log`` keeps the answers measured
  and FQE's curve as it trains (a run cut short: its bound so far);
- ``ratio``: FQE training seconds to the same MSE over ``answer_ms``; ``rolled_ratio`` (an
  expansion): over ``rolled_ms``, a new reward at points already rolled out.

Each operator of a policy-scored run also answers by its model-based expansion ``METHOD+kK``
(``--horizons``, default the run's own): ``rollout_ms`` is the one-step model's K-step rollout
under pi from the pairs (once per set of points, shared by every reward and operator; measured
once per K), ``answer_ms`` a new
reward's whole answer at new points, timed whole: each call at its own ``--pairs`` pairs drawn
afresh from the data, nothing about them held (``fresh_ms``: the rollout, the reward-free sums over
it, the reward's evaluation and the operator's), ``rolled_ms`` a new reward's answer
at points already rolled out (the reward a new member of the family: its family's function
compiled once, ``transitions.Member``), ``rolled_written_ms`` the same with the reward a plain
callable, run op by op as written; ``cycle`` the rollout's tolerance for a point repeating a cycle of
the closed loop without the model (``OneStepConfig.cycle``; ``--cycle 0,1e-4``: a row per value).
``METHOD+kauto`` (where the run can choose: an ensemble or its stretches, and two or more
operators) times the horizon's choice for the reward and the answer at it (``chosen``), at new
points and at points rolled out. With two or more operators, ``A+kK~B+kK~...`` (the longest K) and
``A+kauto~B+kauto~...`` time the mean of their answers (``resolvent.MeanModel``: one rollout, every
operator's tail), the answer auto keeps where operators tie.

A run with ``distil.horizon`` = K (``--distil K`` when training here) also times each operator's
distilled student ``METHOD+dK``: G_K's accuracy asked of one forward pass, no rollout; and
``METHOD+dK+kk``, G_k with the student as its tail (a k-step rollout at new points).

A run with a bank (``bank.points`` = P, or its default under ``auto``; ``--bank P`` for any run, or when training here;
``algorithms/bank.py``; from the states the run's evaluation would roll it out from) times
``METHOD+bK+kk``: k model steps, then the values of the bank states nearest s_k. Its
``bank_ms`` is the bank's K-step rollout from the P states and its search tree (once per run, at
fit or load time, before any reward); ``answer_ms`` at new points (timed whole, as above) is
made of the k-step rollout, the nearest bank states to s_k at the kept members' rows (``near_ms``,
the search the answer makes) and a new reward's answer from them (``rolled_ms``: its
values along the bank's rollouts, their gather and the first k steps). With ``bank.reach`` > 0 (the
default) each point stops rolling where the bank reaches it: the rollout (``rollout_ms``) is its
own, at most k steps, ``steps_mean`` the model steps a point took on average.

Each line names the ``device`` it ran on (JAX's first device). The lines come after FQE's
training; stderr says each answer's time and MSE as soon as it is measured.

``--tiny``: a smoke run (tiny networks, a few steps) that checks the script, not the numbers.
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import statistics
import sys
import tempfile
import time

import jax
import numpy as np

import resolvent
from resolvent.algorithms.bank import Bank, BankConfig, bank_starts
from resolvent.algorithms.distil import DistilConfig
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.algorithms.expansion import expand
from resolvent.experiments import EvaluateConfig, RunDir, prepare, run_evaluate
from resolvent.experiments.evaluate import DEFAULT_METHODS, make_method, named_key, score
from resolvent.experiments.evaluate_config import ORACLES
from resolvent.keys import name_id
from resolvent.model import AUTO, MEAN, MeanModel
from resolvent.transitions import Member

TINY = dict(onestep=OneStepConfig(hidden=(16,), steps=20), horizons=(2,),
            distil=DistilConfig(horizon=2, points=32, rewards=4, steps=10, batch_size=16, n_refs=16),
            bank=BankConfig(horizon=3, steps=2, least=1),
            m=16, n_initial=4, n_train_rewards=8, n_test_rewards=2, hidden=(16,), features=8, gt_tol=1e-3,
            sf_fit_points=512, sf_generic_basis=8, eval_points=("reset",))


def warm_ms(f, repeats: int) -> float:
    """Median wall milliseconds of ``f()`` (its result blocked on) over ``repeats`` calls after one."""
    jax.block_until_ready(f())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def new(reward, written: bool = False):
    """The same reward as a new object: an expansion keeps the last reward evaluated along its
    rollout, so a timing that asks one reward again would skip its evaluation. A family's member
    is a new member of its family (``transitions.Member``: its family's function compiled once,
    for every member), or, ``written``, a plain callable a user would write (run op by op)."""
    return Member(reward.fn, reward.param) if isinstance(reward, Member) and not written else lambda f: reward(f)


def auto_rows(run_dir: str, method: str, row: dict, horizons, reward, obs, act, gt, truth, features: dict,
              repeats: int) -> list[dict]:
    """``METHOD+kauto``: the horizon chosen for the reward (the members' spread under pi against the
    operators'), then G_k at it, from the longest rollout (the choice's) at new points (``answer_ms``)
    and at points already rolled out (``rolled_ms``); none where the run cannot choose."""
    auto = seed0(resolvent.load(run_dir, f"{method}+kauto"))
    auto.horizons = tuple(horizons)
    if not auto.can_choose():
        return []

    return [{**row, "method": f"{method}+kauto", "answer_ms": fresh_ms(auto, reward, features, len(obs), None, repeats),
             "rolled_ms": warm_ms(lambda: auto.q_values(new(reward), obs, act), repeats),
             "chosen": auto.choose_horizon(reward, obs, act),
             "mse": float(np.mean((auto.q_values(reward, gt.obs0, gt.action0) - truth) ** 2))}]


def mean_rows(run_dir: str, methods: list[str], row: dict, horizons, rollout_ms: dict, reward, obs, act, gt, truth,
              features: dict, repeats: int) -> list[dict]:
    """The mean of every operator's answer at one horizon (``resolvent.MeanModel``, the answer auto
    keeps where operators tie: ``trust.with_partners``), at the longest of ``horizons`` and by kauto
    (where the run can choose, ``chosen`` its k): one rollout shared by the members (``rollout_ms``:
    the longest horizon's), each member's tail. ``encode_ms`` and ``forward_ms`` are every member's
    together; ``answer_ms`` at new points, timed whole; ``rolled_ms`` and ``rolled_written_ms`` at
    points already rolled out, as an expansion's."""
    rows, longest = [], max(horizons)
    for k in (longest, AUTO):
        name = MEAN.join(f"{m}+k{k}" for m in methods)
        mean = resolvent.load(run_dir, name)
        mean = MeanModel(name, tuple(seed0(m) for m in mean.members))
        if k == AUTO:
            for m in mean.members:
                m.horizons = tuple(horizons)
            if not mean.members[0].can_choose():
                continue
        encs = [m.encode([reward]) for m in mean.members]                  # (1, e) each
        first = mean.members[0]
        chosen = {"chosen": first.choose_horizon(reward, obs, act)} if k == AUTO else {}
        rows.append({**row, "method": name, "members": len(mean.members), **chosen,
                     "rollout_ms": rollout_ms[longest, None] if (longest, None) in rollout_ms else
                     warm_ms(lambda: expand(first.onestep, first.target_policy, obs, act, longest), repeats),
                     "rolled_written_ms": warm_ms(lambda: mean.q_values(new(reward, True), obs, act), repeats),
                     "encode_ms": warm_ms(lambda: [m.encode([reward]) for m in mean.members], repeats),
                     "forward_ms": warm_ms(lambda: [m.q_from_encodings(e, obs, act)
                                                    for m, e in zip(mean.members, encs)], repeats),
                     "rolled_ms": warm_ms(lambda: mean.q_values(new(reward), obs, act), repeats),
                     "answer_ms": fresh_ms(mean, reward, features, len(obs), None, repeats),
                     "mse": float(np.mean((mean.q_values(reward, gt.obs0, gt.action0) - truth) ** 2))})
    return rows


def bank_rows(model, name: str, bank_cfg: BankConfig, starts: np.ndarray, row: dict, horizons, rollout_ms: dict,
              reward, obs, act, gt, truth, features: dict, repeats: int) -> list[dict]:
    """``METHOD+bK+kk`` for each k of ``horizons`` (``model``: the operator, seed 0, with the run's
    one-step model and policy): the bank's rollout from ``starts`` and its tree once (``bank_ms``),
    then at new points the k-step rollout (``rollout_ms``: the expansion's, or with ``bank.reach``
    its own, each point stopping where the bank reaches it), the nearest bank states to s_k at
    the kept members' rows (``near_ms``: the answer's search) and a new reward's answer from them
    (``rolled_ms``); the whole answer at new points timed whole (``fresh_ms``)."""
    t0 = time.perf_counter()
    model.bank = Bank(bank_cfg, starts).build(model.onestep, model.target_policy)
    bank_ms, rows = 1e3 * (time.perf_counter() - t0), []
    until = model.bank.until(model.gamma) if bank_cfg.reach else None
    for k in horizons:
        ex = model.expansion(obs, act, k)
        s_k = ex.obs[ex.kept]                                     # (m n, ds): the kept members', where the bank answers
        ends = np.full(len(obs), k) if ex.ends is None else ex.ends
        rolled = (rollout_ms[k, None] if until is None and (k, None) in rollout_ms else
                  warm_ms(lambda: expand(model.onestep, model.target_policy, obs, act, k, until), repeats))
        near_ms = warm_ms(lambda: model.bank.neighbours_of(s_k), repeats)
        rolled_ms = warm_ms(lambda: model.q_values(new(reward), obs, act, horizon=k), repeats)
        whole = fresh_ms(model, reward, features, len(obs), k, repeats)
        q = model.q_values(reward, gt.obs0, gt.action0, horizon=k)
        rows.append({**row, "method": f"{name}+b{bank_cfg.horizon}+k{k}", "reach": bank_cfg.reach,
                     "agree": bank_cfg.agree, "agree_spread": bank_cfg.agree_spread, "bank_ms": bank_ms,
                     "bank_states": len(model.bank), "rollout_ms": rolled, "steps_mean": round(float(ends.mean()), 2),
                     "near_ms": near_ms, "rolled_ms": rolled_ms, "answer_ms": whole,
                     "mse": float(np.mean((q - truth) ** 2))})
    model.bank = None
    return rows


def fresh_ms(answer, reward, features: dict, n: int, k, repeats: int) -> float:
    """Median wall milliseconds of a new reward's whole answer by ``answer`` at new points, horizon
    ``k``: every call at its own n state-action pairs of the data (``features``), drawn afresh (with
    replacement where n is all of them), so nothing about them is held from a call before: the
    rollout, its reward-free sums, the bank's search and the reward's evaluation are all timed."""
    draws = itertools.count(1)
    size = len(features["obs"])

    def at_new_points():
        i = np.random.default_rng(next(draws)).choice(size, n, replace=n >= size)
        return answer.q_values(new(reward), features["obs"][i], features["action"][i], horizon=k)
    return warm_ms(at_new_points, repeats)


def seed0(model):
    """The model with its first network seed only."""
    return dataclasses.replace(model, params=jax.tree_util.tree_map(lambda a: a[:1], model.params))


def fqe_curve(cfg: EvaluateConfig, p, target_mse: float, chunk: int, budget: float = math.inf,
              log: str | None = None) -> list[tuple[int, float, float]]:
    """(steps, training seconds, test MSE) of the per-reward FQE oracle every ``chunk`` steps,
    until its MSE is at most ``target_mse``, ``cfg.steps`` are spent or its training has taken
    ``budget`` seconds; each point also appended to the JSON-lines file ``log`` as it comes (a long
    run cut short keeps its curve so far: a lower bound on the ratios)."""
    fqe = make_method("fqe", cfg, p)
    state = fqe.init(named_key(cfg.seed, "fqe", "init", "0")[None], fqe.data)
    keys = named_key(cfg.seed, "fqe", "train", "0")[None]
    seconds, steps, curve = 0.0, 0, []
    while steps < cfg.steps and seconds < budget:
        split = jax.vmap(jax.random.split)(keys)
        keys, chunk_keys = split[:, 0], split[:, 1]
        t0 = time.perf_counter()
        state, loss = fqe.train(state, fqe.data, chunk_keys)
        jax.block_until_ready(loss)
        seconds += time.perf_counter() - t0
        steps += chunk
        curve.append((steps, seconds, float(score(fqe.predict(state.params), p)["test_mse"][0])))
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"fqe_steps": steps, "fqe_seconds": round(seconds, 3),
                                    "fqe_mse": round(curve[-1][2], 4)}) + "\n")
        if curve[-1][2] <= target_mse:
            break
    return curve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default=None, help="a finished evaluate run")
    ap.add_argument("--family", default="pendulum-angle")
    ap.add_argument("--dataset", default="expert")
    ap.add_argument("--methods", default=None,
                    help=f"operators to train here (default {','.join(DEFAULT_METHODS)}), or the run's to time "
                         "(default all)")
    ap.add_argument("--steps", type=int, default=15_000, help="operator steps when training here")
    ap.add_argument("--fqe-steps", type=int, default=100_000, help="most FQE steps")
    ap.add_argument("--fqe-chunk", type=int, default=250, help="FQE steps between its scores")
    ap.add_argument("--fqe-budget", type=float, default=math.inf,
                    help="most seconds of FQE training (checked after each chunk; default: no limit)")
    ap.add_argument("--fqe-log", default=None,
                    help="append FQE's (steps, seconds, MSE) to this JSON-lines file after each chunk")
    ap.add_argument("--oracle", choices=ORACLES, default=None,
                    help="the FQE oracle's recipe (EvaluateConfig.oracle; default: the run's)")
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--horizons", default=None, help="expansion horizons K, comma-separated (default: the run's)")
    ap.add_argument("--distil", type=int, default=0, help="when training here: distil the expansion G_K, K this")
    ap.add_argument("--bank", type=int, default=0,
                    help="P, the states a bank rolls out from (default: the run's bank.points; 0: none)")
    ap.add_argument("--reach", default="",
                    help="the bank's reach (BankConfig.reach), comma-separated: a row per value (default: the run's)")
    ap.add_argument("--agree", default="",
                    help="the bank's futures' agreement (BankConfig.agree), comma-separated: a row per value "
                         "(default: the run's)")
    ap.add_argument("--cycle", default="",
                    help="the expansions' rollout cycle tolerance (OneStepConfig.cycle), comma-separated: a row per "
                         "value (default: the run's one-step model's)")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per measure, after one warm call")
    ap.add_argument("--tiny", action="store_true", help="smoke sizes: checks the script, not the numbers")
    args = ap.parse_args()
    if args.tiny:
        args.steps, args.fqe_steps, args.fqe_chunk, args.pairs, args.repeats = 20, 20, 10, 1_000, 1

    if args.run:
        bench(args, args.run, EvaluateConfig.from_dict(RunDir(args.run).read_config()))
        return
    trained = tuple(args.methods.split(",")) if args.methods else DEFAULT_METHODS
    with tempfile.TemporaryDirectory(prefix="zero-shot-") as run_dir:
        cfg = EvaluateConfig(family=args.family, dataset=args.dataset, methods=trained,
                             seeds=1, steps=args.steps, log_every=min(500, args.steps),
                             checkpoint_every=args.steps, **(TINY if args.tiny else {}))
        if args.distil:
            cfg = dataclasses.replace(cfg, distil=dataclasses.replace(cfg.distil, horizon=args.distil))
        if args.bank:
            cfg = dataclasses.replace(cfg, bank=dataclasses.replace(cfg.bank, points=args.bank))
        run_evaluate(cfg, run_dir, plot=False)
        bench(args, run_dir, cfg)


def bench(args, run_dir: str, cfg: EvaluateConfig) -> None:
    """One JSON line per operator of the run ``run_dir``."""
    methods = [m for m in cfg.methods if m != "fqe" and (args.methods is None or m in args.methods.split(","))]
    if not methods:
        raise SystemExit(f"--methods {args.methods}: none is an operator of the run ({', '.join(cfg.methods)})")
    # one new reward: a single test member, drawn under its own name; FQE's budget as its run
    fqe_steps = args.fqe_chunk * math.ceil(args.fqe_steps / args.fqe_chunk)
    one = dataclasses.replace(cfg, seeds=1, n_test_rewards=1, methods=("fqe",), log_every=args.fqe_chunk,
                              steps=fqe_steps, checkpoint_every=fqe_steps, eval_points=("reset",), trust="off",
                              oracle=args.oracle or cfg.oracle)
    p = prepare(one)
    name, reward = p.source.rewards["test"][0]
    truth, gt = np.asarray(p.sets["test"].truth["reset"][0]), p.source.gt
    idx = np.random.default_rng(0).choice(len(p.x), min(args.pairs, len(p.x)), replace=False)
    obs, act = p.features["obs"][idx], p.features["action"][idx]

    horizons = cfg.horizons if args.horizons is None else [int(k) for k in args.horizons.split(",") if k]
    cycles = [float(c) for c in args.cycle.split(",")] if args.cycle else [None]   # None: the run's model's own
    bank_cfg = (dataclasses.replace(cfg.bank, points=args.bank) if args.bank
                else cfg.bank.resolve(cfg.auto, len(p.features["obs"])))       # the run's own (auto: 2048 states)
    rows, rollout_ms, done = [], {}, 0   # rollout_ms per (k, cycle): the run's one-step model and pi, any operator
    for method in methods:
        model = seed0(resolvent.load(run_dir, method))
        enc = model.encode([reward])                                       # (1, e)
        row = {"method": method, "family": cfg.family, "dataset": cfg.dataset, "reward": name, "pairs": len(idx),
               "device": jax.devices()[0].device_kind,
               "answer_ms": warm_ms(lambda: model.q_values(reward, obs, act), args.repeats),
               "encode_ms": warm_ms(lambda: model.encode([reward]), args.repeats),
               "forward_ms": warm_ms(lambda: model.q_from_encodings(enc, obs, act), args.repeats)}
        rows.append({**row, "mse": float(np.mean((model.q_values(reward, gt.obs0, gt.action0) - truth) ** 2))})
        student = None
        if cfg.distil.horizon and model.scored_under_policy:   # G_K distilled into the operator: one forward pass
            student = seed0(resolvent.load(run_dir, f"{method}+d{cfg.distil.horizon}"))
            rows.append({**row, "method": f"{method}+d{cfg.distil.horizon}",
                         "answer_ms": warm_ms(lambda: student.q_values(reward, obs, act), args.repeats),
                         "forward_ms": warm_ms(lambda: student.q_from_encodings(enc, obs, act), args.repeats),
                         "mse": float(np.mean((student.q_values(reward, gt.obs0, gt.action0) - truth) ** 2))})
        if horizons:   # loaded as an expansion: with the run's one-step model (if it has one) and policy
            model = seed0(resolvent.load(run_dir, f"{method}+k{horizons[0]}"))
        own = model.onestep
        for cycle in cycles if own is not None else ():
            expanding = [a for a in (model, student) if a is not None]
            for answer in expanding:   # the rollout's cycle tolerance (OneStepConfig.cycle): a row per value
                answer.onestep = own if cycle is None else own._replace(cycle=cycle)
            for k in horizons:
                if (k, cycle) not in rollout_ms:
                    rollout_ms[k, cycle] = warm_ms(lambda: expand(model.onestep, model.target_policy, obs, act, k),
                                                   args.repeats)
                tail = [(f"{method}+d{cfg.distil.horizon}+k{k}", student)] if student is not None else []
                for label, answer in [(f"{method}+k{k}", model), *tail]:   # G_k, and with the student as its tail
                    rolled_ms = warm_ms(lambda: answer.q_values(new(reward), obs, act, horizon=k), args.repeats)
                    written_ms = warm_ms(lambda: answer.q_values(new(reward, True), obs, act, horizon=k), args.repeats)
                    whole = fresh_ms(answer, reward, p.features, len(idx), k, args.repeats)
                    q = answer.q_values(reward, gt.obs0, gt.action0, horizon=k)
                    rows.append({**row, "method": label, "cycle": model.onestep.cycle,
                                 "rollout_ms": rollout_ms[k, cycle], "rolled_ms": rolled_ms,
                                 "rolled_written_ms": written_ms, "answer_ms": whole,
                                 "mse": float(np.mean((q - truth) ** 2))})
            for answer in expanding:
                answer.onestep = own
        if horizons and model.onestep is not None and bank_cfg.points and model.scored_under_policy:
            starts = bank_starts(p.features, bank_cfg, name_id(f"{cfg.seed}-bank"))   # the run's own (evaluate's)
            agrees = [float(a) for a in args.agree.split(",")] if args.agree else [bank_cfg.agree]
            for reach in (float(r) for r in args.reach.split(",")) if args.reach else (bank_cfg.reach,):
                for agree in agrees:
                    rows += bank_rows(model, method, dataclasses.replace(bank_cfg, reach=reach, agree=agree), starts,
                                      row, horizons, rollout_ms, reward, obs, act, gt, truth, p.features,
                                      args.repeats)
        if horizons and model.onestep is not None and len(methods) > 1:
            rows += auto_rows(run_dir, method, row, horizons, reward, obs, act, gt, truth, p.features, args.repeats)
        for r in rows[done:]:   # what is measured so far, before FQE's training (stdout has the final lines)
            print(f"measured {r['method']}: answer {r['answer_ms']:.1f} ms, MSE {r['mse']:.4g}", file=sys.stderr,
                  flush=True)
        done = len(rows)
    if horizons and model.onestep is not None and len(methods) > 1:   # the last operator's expansion
        rows += mean_rows(run_dir, methods, row, horizons, rollout_ms, reward, obs, act, gt, truth, p.features,
                          args.repeats)
    if args.fqe_log:   # the answers measured, before FQE's long training: the log's first line
        with open(args.fqe_log, "a") as f:
            f.write(json.dumps({"answers": [{k: r[k] for k in ("method", "answer_ms", "mse")} for r in rows]}) + "\n")
    curve = fqe_curve(one, p, min(r["mse"] for r in rows), args.fqe_chunk, args.fqe_budget, args.fqe_log)
    for r in rows:
        steps, seconds, mse = next((c for c in curve if c[2] <= r["mse"]), curve[-1])
        r.update(oracle=one.oracle, fqe_steps=steps, fqe_seconds=round(seconds, 3), fqe_mse=round(mse, 4),
                 reached=mse <= r["mse"], fqe_best_mse=round(min(c[2] for c in curve), 4),
                 ratio=round(1e3 * seconds / r["answer_ms"], 1),
                 **({"rolled_ratio": round(1e3 * seconds / r["rolled_ms"], 1)} if "rolled_ms" in r else {}),
                 mse=round(r["mse"], 4),
                 **{k: round(r[k], 3) for k in ("answer_ms", "encode_ms", "forward_ms", "rollout_ms", "rolled_ms",
                                                "near_ms", "bank_ms", "rolled_written_ms") if k in r})
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
