"""The ``resolvent`` command line."""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import click
import numpy as np

from resolvent.algorithms.fqe import LR_SCHEDULES
from resolvent.data.dataset import REFERENCE_SAMPLING
from resolvent.evaluation.points import KINDS as POINT_KINDS
from resolvent.experiments.evaluate_config import (ABSORBING, AUTO_CANDIDATES, METHODS, ORACLE_REWARDS, ORACLES,
                                                   PRESETS, REF_ACTIONS, TRUST, EvaluateConfig)
from resolvent.experiments.optimize_config import ALGORITHMS, OptimizeConfig
from resolvent.experiments.optimize_config import METHODS as CONTROL_METHODS
from resolvent.families import FAMILIES, get_family
from resolvent.model import default_method
from resolvent.options import config_options, config_values, replace_paths
from resolvent.paths import compile_cache
from resolvent.rewards import PRIORS

# Each command imports what it runs inside its body, so that `resolvent --help` and a bad option
# answer at once, without loading the experiments' runners (matplotlib, Ray, rliable) or sbx/torch;
# the options of evaluate and optimize are their configs' fields (light modules).
FAMILY = click.Choice(sorted(FAMILIES))
EVALUATE_PRESETS = {name: EvaluateConfig.preset(name) for name in PRESETS}   # the default first
EVALUATE_SKIP = ("family", "auto", "fqe.decay_steps")   # the argument; set by methods auto; by steps
OPTIMIZE_SKIP = ("family",)                             # the argument


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def evaluate_config(family: str | None, preset: str, options: dict) -> EvaluateConfig:
    """An evaluate run's config: the preset's, with the ``options`` the command was given (its
    config fields' parameters; None: not given) and the ``family`` set."""
    base = EVALUATE_PRESETS[preset]
    return replace_paths(base, {"family": family, **config_values(base, options, EVALUATE_SKIP)})


def optimize_config(family: str, options: dict) -> OptimizeConfig:
    """An optimize run's config: the ``options`` the command was given and the ``family``."""
    base = OptimizeConfig()
    return replace_paths(base, {"family": family, **config_values(base, options, OPTIMIZE_SKIP)})


def results_table(results: dict) -> str:
    """MSE and R^2 of every method on the training, test and probe rewards, and the worst
    probe's R^2 (mean over seeds; MSE also ± std); then every point kind's metrics and the trust report."""
    from resolvent.experiments.tables import points_lines, support_lines, trust_lines

    cols = [(f"{s} {k}", f"{s}_{k}") for s in ("train", "test", "probe") for k in ("mse", "r2")]
    prior = results.get("reward_prior", "family")
    head = f"{results['family'] or 'data'} / {results['dataset']} (reward prior: {prior})"
    if not results.get("ground_truth", True):
        lines = [f"{head}: no ground truth (--env none, or the environment cannot be built here): "
                 f"the Bellman residual at the end of training, mean over seeds",
                 f"{'method':<10} {'residual':>12} {'steps':>7} {'seconds':>8}"]
        lines += [f"{m:<10} {np.mean(r.get('loss', [np.nan])):>12.4g} {r['steps']:>7} {r['seconds']:>8.1f}"
                  for m, r in results["methods"].items()]
        return "\n".join(lines + ["training rewards: " + ", ".join(results.get("train_rewards", []))]
                         + trust_lines(results) + support_lines(results))
    lines = [f"{head}: accuracy at the ground-truth initial points, mean over seeds; "
             f"R^2 = 1 - MSE / Var(true Q), 0 = a constant",
             f"{'method':<10}" + "".join(f" {c:>17}" if c.endswith("mse") else f" {c:>9}" for c, _ in cols)
             + f" {'worst probe':>12} {'steps':>7} {'seconds':>8}"]
    for method, r in results["methods"].items():
        row = f"{method:<10}"
        for c, key in cols:
            v = np.asarray(r.get(key, []), float)
            if c.endswith("mse"):
                row += f" {v.mean():>9.4g} ± {v.std():<5.2g}" if v.size else f" {'-':>17}"
            else:
                row += f" {v.mean():>9.3f}" if v.size else f" {'-':>9}"
        each = r.get("probe_r2_each", {})
        worst = min(each, key=lambda k: np.mean(each[k])) if each else None
        row += f" {np.mean(each[worst]):>12.3f}" if worst else f" {'-':>12}"
        lines.append(row + f" {r['steps']:>7} {r['seconds']:>8.1f}")
    if results.get("probes"):
        lines.append("probe rewards: " + ", ".join(results["probes"]))
    return "\n".join(lines + points_lines(results) + trust_lines(results) + support_lines(results))


def split_methods(methods: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in methods.split(",") if x.strip())


# what a command can foresee: bad input, damaged files, a run directory in use, a full disk
EXPECTED = (ValueError, OSError, RuntimeError)


def refuse_with_resume(resume: bool, keep=("out", "resume")) -> None:
    """``--resume`` continues a run with its own configuration: options given on the command
    line beside it would be ignored, so they are refused, by name."""
    if not resume:
        return
    ctx = click.get_current_context()
    given = sorted(p.opts[0] for p in ctx.command.params if p.name not in keep
                   and ctx.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE)
    if given:
        fail("--resume continues the run with its own configuration (config.json); drop "
             + ", ".join(given) + " or start a new --out")


def read_run_config(run_dir: str) -> dict:
    """A run directory's config.json, or one clear error."""
    from resolvent.experiments import RunDir

    try:
        cfg = RunDir(run_dir).read_config()
    except EXPECTED as e:
        fail(str(e))
    if not isinstance(cfg, dict) or "family" not in cfg:
        fail(f"{run_dir}/config.json is not a resolvent run configuration")
    return cfg


def launch(make_config, run, out: str, table, plot_name: str) -> None:
    """Build an experiment's config, run it into ``out``, print its table; one clear error."""
    try:
        cfg = make_config()
        click.echo(f"run directory: {out}")
        results = run(cfg)
    except EXPECTED as e:
        fail(str(e))
    click.echo(table(results))
    click.echo(f"results: {Path(out) / 'results.json'}   plot: {Path(out) / plot_name}")


def reward_options(f):
    """The reward-parameter options shared by ``q`` and ``rollout``."""
    for name, text in reversed([("--param", "the family's reward parameter"),
                                ("--theta0", "Pendulum-Angle's target angle"),
                                ("--v-target", "HalfCheetah-Vel's target velocity"),
                                ("--theta", "Ant-Dir's direction")]):
        f = click.option(name, type=float, default=None, help=text)(f)
    return f


def points_option(default: str):
    """``--at``: the query points, an .npz read by ``read_points``."""
    return click.option("--at", "at", type=click.Path(exists=True, dir_okay=False), default=None,
                        help=f"the points: an .npz holding observations (n, ds) and actions (n, da) "
                             f"[default: {default}]")


def reward_param(family, **given) -> float:
    """The one reward parameter given on the command line, checked against the family."""
    chosen = {k: v for k, v in given.items() if v is not None}
    if len(chosen) != 1:
        fail(f"give exactly one reward parameter (--{family.param_name.replace('_', '-')})")
    (name, value), = chosen.items()
    if name not in ("param", family.param_name):
        fail(f"--{name.replace('_', '-')} is not a parameter of {family.name}; "
             f"its parameter is --{family.param_name.replace('_', '-')}")
    return value


def optimize_table(results: dict) -> str:
    tests = list(next(iter(results["methods"].values()))["test_returns"]) if results["methods"] else []
    head = f"{'method':<10} {'original reward':>20}" + "".join(f" {t:>20}" for t in tests)
    lines = [f"{results['family']} / {results['dataset']} ({results['algorithm']}): episodic return "
             f"of the zero-shot policies (mean ± std over seeds)", head + f" {'steps':>7} {'seconds':>8}"]
    fmt = lambda v: f"{np.mean(v):>11.1f} ± {np.std(v):<6.1f}"  # noqa: E731
    for method, r in results["methods"].items():
        lines.append(f"{method:<10} {fmt(r['return'])}" + "".join(f" {fmt(r['test_returns'][t])}" for t in tests)
                     + f" {r['steps']:>7} {r['seconds']:>8.1f}")
    lines.append(f"{'TD3 target':<10} {results['target_return']:>20.1f}"
                 + "".join(f" {results['target_test_returns'][t]:>20.1f}" for t in tests))
    return "\n".join(lines)


@click.group()
@click.version_option(package_name="resolvent")
def main() -> None:
    """Zero-shot reward transfer with operator deep Q-learning (Tang, Feng, Liu)."""
    compile_cache()


@main.command()
@click.argument("family", type=FAMILY, default=None, required=False)
@click.option("--preset", type=click.Choice(list(PRESETS)), default="default", show_default=True,
              help="default: the best configuration measured; paper: the paper's exactly")
@config_options(EVALUATE_PRESETS["default"], presets=EVALUATE_PRESETS, skip=EVALUATE_SKIP,
                names={"fqe.tau": ("--tau",), "fqe.lr": ("--lr",), "fqe.prior.kind": ("--reward-prior",),
                       "fqe.prior.n_generic": ("--prior-rewards",)},
                choices={"methods": METHODS, "ref_actions": REF_ACTIONS, "trust": TRUST, "absorbing": ABSORBING,
                         "oracle_rewards": ORACLE_REWARDS, "oracle": ORACLES,
                         "eval_points": POINT_KINDS, "ref_sampling": REFERENCE_SAMPLING, "fqe.prior.kind": PRIORS,
                         "fqe.lr_schedule": LR_SCHEDULES},
                helps={"data": "instead of a FAMILY: a Minari dataset id of any environment",
                       "methods": f"the networks to train, fqe: the per-reward oracle; auto: train "
                                  f"{', '.join(AUTO_CANDIDATES)} and keep the one the trust report favours "
                                  f"(see --auto-tie)"})
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="run directory [default: runs/FAMILY-DATASET-TIME]")
@click.option("--resume", is_flag=True, help="continue the run in --out from its last checkpoint")
def evaluate(family, preset, out, resume, **options):
    """Offline policy evaluation: train operators and compare with the ground truth.

    On a paper FAMILY (default pendulum-angle), or on any Minari dataset (--data) with its
    target policy (--policy): the operators then train on the dataset's own reward and the
    generic reward prior, and are scored where the environment builds. Every field of the
    run's configuration (config.json) is an option; nested ones are named by their path."""
    from resolvent.experiments import run_evaluate

    refuse_with_resume(resume)
    if resume and out is None:
        fail("--resume needs --out, the run directory to continue")
    data = options["data"]
    if data is None:
        family = family or "pendulum-angle"
        given = [f"--{k}" for k in ("policy", "env", "probes") if options[k] is not None]
        if given:
            fail(f"{', '.join(given)} go with --data (a dataset of one's own), not a family")
    elif family is not None:
        fail(f"give a FAMILY ({family}) or --data ({data}), not both")
    name = family if data is None else data.replace("/", "-")
    out = out or f"runs/{name}-{options['dataset'] if data is None else 'data'}-{time.strftime('%Y%m%d-%H%M%S')}"

    launch(lambda: evaluate_config(family, preset, options), lambda cfg: run_evaluate(cfg, out, resume=resume),
           out, results_table, "mse.png")
    try:
        method, why = default_method(out)
    except EXPECTED:          # a run of the FQE oracle alone answers no new reward
        return
    click.echo(f"any reward, zero-shot: resolvent q {out} --reward FILE.py:ATTR [--at POINTS.npz]   "
               f"(answered by {method}, {why})")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--method", default=None,
              help="a trained operator, or OPERATOR+kK: its model-based expansion of K steps (e.g. favor+k30); "
                   "in a run that distilled, OPERATOR+dK (the student) and OPERATOR+dK+kk (k steps, the student "
                   "after them); in a run with a bank, OPERATOR+bK+kk (at most k steps, fewer where the bank reaches a "
                   "point (bank.reach), then the bank's values); ANSWER~ANSWER~...: the mean of those answers at one "
                   "horizon (e.g. fb+k400~favor+k400) "
                   "[default: the one the run's `auto` chose, else the run's most accurate against its ground "
                   "truth, else the one auto's rule keeps by its trust report, else its first operator's: "
                   "resolvent.default_method]")
@reward_options
@click.option("--reward", "reward_ref", default=None,
              help="any reward instead of a family parameter: FILE.py:ATTR or MODULE:ATTR, a callable over the "
                   "transition quantities (obs, action, next_obs, the dataset's own reward and infos)")
@points_option("the ground-truth initial points")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="write the answers to this .npz: q (n,), the mean over seeds, and q_seeds (S, n); with the "
                   "run's action-support check, support (n,) (pi's action's distance to the data's nearest over "
                   "the check's threshold, resolvent/evaluation/support.py) and unsupported (n,) (support > 1)")
@click.option("--points", default=10, show_default=True, help="points to print")
def q(run_dir, method, param, theta0, v_target, theta, reward_ref, at, out, points):
    """Zero-shot Q-values of a trained operator: a family member or any reward, at the ground-truth
    initial points (with their Monte-Carlo truth) or at points of one's own."""
    import resolvent
    from resolvent.data.user import load_object
    from resolvent.evaluation import load_ground_truth
    from resolvent.io import atomic_savez
    from resolvent.policies import load_target_policy

    if points < 1:
        fail(f"--points must be >= 1, got {points}")
    cfg = read_run_config(run_dir)
    family = get_family(cfg["family"]) if cfg.get("family") is not None else None
    given = {"param": param, "theta0": theta0, "v_target": v_target, "theta": theta}
    if reward_ref is not None:
        if any(v is not None for v in given.values()):
            fail("give --reward or a family reward parameter, not both")
        try:
            reward = load_object(reward_ref, "reward")
        except ValueError as e:
            fail(str(e))
        if not callable(reward):
            fail(f"the reward {reward_ref} is a {type(reward).__name__}, not a callable of the transition quantities")
        label = f"reward {reward_ref}"
    elif family is None:
        fail(f"{run_dir} is a run on a dataset of one's own ({cfg.get('data')}): it has no family parameter; "
             f"give the reward with --reward FILE.py:ATTR (and the points with --at FILE.npz)")
    else:
        value = reward_param(family, **given)
        if not np.isfinite(value):
            fail(f"the reward parameter must be finite, got {value}")
        reward, label = family.reward_callable(value), f"{family.name}, {family.param_name} = {value}"
    if at is None and family is None:
        fail(f"{run_dir} is a run on a dataset of one's own: give the points with --at FILE.npz "
             f"(observations (n, ds), actions (n, da))")
    try:
        why = None
        if method is None:
            method, why = default_method(run_dir)
        model = resolvent.load(run_dir, method)
        if at is not None:
            obs, act = read_points(at, model.xi_features["obs"].shape[1], len(model.x_mean))
            truth, where = None, f"the {len(obs)} points of {at}"
        else:
            gamma = cfg.get("fqe", cfg).get("gamma", model.gamma)
            gt = load_ground_truth(family, load_target_policy(family.name),
                                   cfg.get("n_initial", EvaluateConfig.n_initial), gamma, cfg.get("gt_tol", 1e-5),
                                   cfg.get("data_seed", 0))
            obs, act, where = gt.obs0, gt.action0, "initial points (s0, a0)"
        qs = model.q_values(reward, obs, act, seed=None)                          # (S, n)
        # where pi's action is far from every action the data took near a point (evaluation/support.py)
        check = model.check_support(obs) if model.support is not None and model.target_policy is not None else None
        steered = check is not None and model.support.dynamics and bool(model.horizon)
        if at is None:
            try:
                truth = gt.q(reward)
            except Exception as e:  # noqa: BLE001 - the user's reward on the true rollouts
                raise ValueError(f"the {label} failed on the ground-truth rollouts: {type(e).__name__}: {e}") from None
        if out is not None:
            atomic_savez(out, q=qs.mean(0), q_seeds=qs,
                         **({} if check is None else {"support": check.relative, "unsupported": check.unsupported}))
    except EXPECTED as e:
        fail(str(e))
    click.echo(f"{label}, method {method} ({model.n_seeds} seeds{f'; {why}' if why else ''}): Q at {where}")
    control = cfg.get("task") == "optimize"      # its operator's Q is the optimal one, not the target's
    head = "optimal Q, predicted" if control else "predicted (mean over seeds)"
    cell = ([""] * qs.shape[1] if check is None else
            [f" {r:>8.2f}{' !' if u else '  '}" for r, u in zip(check.relative, check.unsupported)])
    support_head = "" if check is None else f" {'support':>8}  "
    if truth is None:
        click.echo(f"{'i':>3} {head:>28}{support_head}")
        for i in range(min(points, qs.shape[1])):
            click.echo(f"{i:>3} {qs[:, i].mean():>28.3f}{cell[i]}")
        click.echo(f"Q over all {qs.shape[1]} points: mean {qs.mean():.4g}, min {qs.mean(0).min():.4g}, "
                   f"max {qs.mean(0).max():.4g}" + (f"; written to {out}" if out else ""))
        support_note(check, steered)
        return
    click.echo(f"{'i':>3} {head:>28} {'TD3 target Q (MC)' if control else 'Monte-Carlo truth':>18}{support_head}")
    for i in range(min(points, len(truth))):
        click.echo(f"{i:>3} {qs[:, i].mean():>28.3f} {truth[i]:>18.3f}{cell[i]}")
    support_note(check, steered)
    gap = np.mean((qs.mean(0) - truth) ** 2)
    click.echo((f"mean squared gap to the TD3 target policy's Q over all {len(truth)} initial points: {gap:.4g} "
                f"(an optimize run's operator answers the optimal Q, not the target's: not an error)" if control
                else f"MSE over all {len(truth)} initial points: {gap:.4g}") + (f"; written to {out}" if out else ""))


def support_note(check, steered: bool = False) -> None:
    """``resolvent q``'s line on the action-support check (``evaluation/support.py``); ``steered``: the
    answer an expansion whose run asked for supported dynamics (``SupportConfig.dynamics``)."""
    if check is None:
        return
    if check.unsupported.any():
        how = ("the expansion steps the one-step model at the data's nearest actions where pi's are unsupported "
               "(support.dynamics)" if steered else "the one-step model guesses what pi's action does")
        click.echo(f"support: {check.summary()}; there {how}, and those answers are the least trusted "
                   f"('!' above; support = that distance over {check.threshold:.3g})")
    else:
        click.echo(f"support: at every point pi's action is within {check.threshold:.3g} of an action the data took "
                   f"at the {check.neighbours} nearest data states")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--rewards", "rewards_ref", default=None,
              help="the rewards: FILE.py:ATTR or MODULE:ATTR, a dict {name: callable over the transition quantities} "
                   "[default: a family run's test rewards and probes; a dataset run's own reward and probes]")
@points_option("the run's evaluation points of --kind")
@click.option("--kind", type=click.Choice(list(POINT_KINDS)), default="dataset", show_default=True,
              help="without --at: which of the run's evaluation points")
@click.option("-m", "m", default=8, show_default=True,
              help="points rolled out: half where the candidates disagree most, half at random")
@click.option("--seed", default=0, show_default=True, help="the random half's seed")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="write q (R, n), the chosen candidates, the points rolled out and their truth (and the "
                   "action-support check's rho (n,), support) to this .npz")
def calibrate(run_dir, rewards_ref, at, kind, m, seed, out):
    """Each reward's Q with a few true rollouts: pi rolled out in the run's simulator from m of the
    points, half where the candidates' answers disagree most (answered by their rollouts) and half
    at random, where each reward's candidate for the other points is chosen
    (resolvent/experiments/calibrate.py); the points the run's action-support check marks are
    named, with those of them rolled out. An online step: the simulator must be settable to a state."""
    import resolvent
    from resolvent.data.user import load_object
    from resolvent.experiments.calibrate import calibrate as choose_per_reward
    from resolvent.experiments.calibrate import run_candidates
    from resolvent.experiments.sources import answered_rewards, config_source
    from resolvent.io import atomic_savez

    if m < 1:
        fail(f"-m must be >= 1, got {m}")
    cfg = read_run_config(run_dir)
    if cfg.get("task") == "optimize":
        fail(f"{run_dir} is an optimize run: calibrate chooses among an evaluate run's operators (resolvent evaluate)")
    if (rewards_ref is None or at is None) and cfg.get("data") is not None and cfg.get("policy") is None:
        fail(f"{run_dir} was run from Python with a callable policy: give --rewards FILE.py:ATTR and --at FILE.npz")
    try:
        src = config_source(EvaluateConfig.from_dict(cfg)) if rewards_ref is None or at is None else None
        rewards = (load_object(rewards_ref, "rewards") if rewards_ref is not None
                   else dict(pair for named in answered_rewards(src).values() for pair in named))
        if at is not None:                              # the run's ds + da: its models' input size
            first = resolvent.load(run_dir, run_candidates(run_dir)[0])
            obs, act = read_points(at, first.xi_features["obs"].shape[1], len(first.x_mean))
        elif kind not in src.points:
            raise ValueError(f"{run_dir} has no evaluation points of kind {kind!r}; it has {sorted(src.points)}")
        else:
            obs, act = src.points[kind].obs0, src.points[kind].action0
        c = choose_per_reward(run_dir, rewards, obs, act, m=m, seed=seed)
        if out is not None:
            atomic_savez(out, q=c.q, chosen=np.asarray(c.chosen), labelled=c.labelled, truth=c.truth,
                         candidates=np.asarray(c.candidates),
                         **({} if c.support is None else {"support": c.support.relative}))
    except EXPECTED as e:
        fail(str(e))
    half = m // 2
    click.echo(f"{len(c.candidates)} candidates at {len(obs)} points; pi rolled out from {m} of them: "
               f"{', '.join(map(str, c.labelled[:half])) or 'none'} (where they disagree most), "
               f"{', '.join(map(str, c.labelled[half:]))} (at random, where each reward's candidate is chosen)")
    click.echo(f"{'reward':>24} {'chosen':>14} {'its RMSE at the random ones':>28}")
    for r, name in enumerate(rewards):
        click.echo(f"{name[:24]:>24} {c.chosen[r]:>14} {np.sqrt(c.errors[c.candidates.index(c.chosen[r]), r]):>28.4g}")
    if c.support is not None and c.support.unsupported.any():
        bad = np.flatnonzero(c.support.unsupported)
        rolled = np.intersect1d(bad, c.labelled)
        rest = len(bad) - len(rolled)
        click.echo(f"support: {c.support.summary()}; {len(rolled)} of them rolled out (answered by their truth)"
                   + (f", the answers at the other {rest} the least trusted" if rest else ""))
    if out is not None:
        click.echo(f"written to {out}")


def read_points(path: str, ds: int, dx: int) -> tuple[np.ndarray, np.ndarray]:
    """The query points of an .npz: ``observations`` (n, ds) and ``actions`` (n, da), finite, with
    ``ds`` and ds + da = ``dx`` the run's state and state-action sizes; one clear error otherwise."""
    try:
        with np.load(path) as z:
            arrays = {k: np.asarray(z[k], np.float32) for k in ("observations", "actions") if k in z.files}
            have = z.files
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a readable .npz of points: {e}") from None
    if len(arrays) < 2:
        raise ValueError(f"{path} must hold arrays 'observations' (n, ds) and 'actions' (n, da); it has {have}")
    obs, act = arrays["observations"], arrays["actions"]
    if obs.ndim != 2 or act.ndim != 2 or len(obs) != len(act) or not len(obs):
        raise ValueError(f"{path}: observations {obs.shape} and actions {act.shape} must be (n, ds) and (n, da), "
                         f"n >= 1 the same")
    if (obs.shape[1], act.shape[1]) != (ds, dx - ds):
        raise ValueError(f"{path}: observations of {obs.shape[1]} and actions of {act.shape[1]} dimensions; the run's "
                         f"have {ds} and {dx - ds}")
    if not (np.isfinite(obs).all() and np.isfinite(act).all()):
        raise ValueError(f"{path}: the points must be finite")
    return obs, act


@main.command()
@click.argument("family", type=FAMILY)
@click.option("--retrain", is_flag=True, help="train TD3 again (needs resolvent[train])")
@click.option("--steps", type=int, default=None, help="TD3 steps [default: the family's]")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="where to write the weights [default: $RESOLVENT_HOME/policies/FAMILY]")
@click.option("--install", is_flag=True, help="write the weights into the package, replacing the shipped ones")
def target(family, retrain, steps, seed, out, install):
    """Show (or --retrain) the family's TD3 target policy and its average return."""
    from resolvent.paths import cache_dir
    from resolvent.policies import load_target_policy, target_policy_info
    from resolvent.policies.td3 import check_steps, evaluate_target, shipped_dir, train_td3

    if seed < 0:
        fail(f"--seed must be >= 0, got {seed}")
    fam = get_family(family)
    if not retrain:
        given = [f"--{k}" for k, v in (("steps", steps is not None), ("out", out is not None),
                                        ("install", install)) if v]
        if given:
            fail(f"{', '.join(given)} go with --retrain")
    if retrain:
        if out is not None and install:
            fail("give --out DIR or --install (the package's own folder), not both")
        try:
            check_steps(fam.td3_steps if steps is None else steps)
            dest = shipped_dir() if install else Path(out) if out else cache_dir("policies", fam.name)
            _, meta = train_td3(fam, steps=steps, seed=seed, out_dir=dest)
        except (*EXPECTED, ImportError) as e:
            fail(str(e))
        click.echo(json.dumps(meta, indent=2))
        click.echo(f"weights: {dest / (fam.name + '.npz')}" + ("" if install else
                   "   (the shipped policy is unchanged; --install replaces it)"))
        return
    try:
        actor = load_target_policy(fam.name)
    except FileNotFoundError as e:
        fail(str(e))
    info = target_policy_info(fam.name)
    now = evaluate_target(fam, actor)
    click.echo(json.dumps({**info, **{f"{k}_now": v for k, v in now.items()}}, indent=2))


@main.command()
@click.argument("family", type=FAMILY)
@click.option("--kind", default="expert", show_default=True, help="replay, expert or medium")
@click.option("--seed", default=0, show_default=True)
@click.option("--rebuild", is_flag=True)
def dataset(family, kind, seed, rebuild):
    """Build (or load) an offline dataset, stored in the Minari format."""
    from resolvent.data import dataset_id, load_transitions

    if seed < 0:
        fail(f"--seed must be >= 0, got {seed}")
    fam = get_family(family)
    try:
        data = load_transitions(fam, kind, seed, rebuild=rebuild)
    except EXPECTED as e:
        fail(str(e))
    n = len(data["obs"])
    click.echo(f"{dataset_id(fam, kind, seed)}: {n} transitions, "
               f"{int(data['terminated'].sum())} terminated, {int(data['truncated'].sum())} truncated; "
               f"load with minari.load_dataset({dataset_id(fam, kind, seed)!r})")


@main.command()
@click.argument("family", type=FAMILY, default="pendulum-angle")
@config_options(OptimizeConfig(), skip=OPTIMIZE_SKIP, names={"eval_episodes": ("--episodes",)},
                choices={"methods": CONTROL_METHODS, "algorithm": ALGORITHMS})
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="run directory [default: runs/optimize-FAMILY-DATASET-TIME]")
@click.option("--resume", is_flag=True, help="continue the run in --out from its last checkpoint")
def optimize(family, out, resume, **options):
    """Offline policy optimisation: operator DQN / BCQ, zero-shot returns in the environment.

    Every field of the run's configuration (config.json) is an option."""
    from resolvent.experiments import run_optimize

    refuse_with_resume(resume)
    if resume and out is None:
        fail("--resume needs --out, the run directory to continue")
    out = out or f"runs/optimize-{family}-{options['dataset']}-{time.strftime('%Y%m%d-%H%M%S')}"
    launch(lambda: optimize_config(family, options), lambda cfg: run_optimize(cfg, out, resume=resume),
           out, optimize_table, "returns.png")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--method", default="maxout", show_default=True)
@reward_options
@click.option("--episodes", default=5, show_default=True)
@click.option("--seed", default=0, show_default=True, help="network seed (index) of the model")
@click.option("--env-seed", default=0, show_default=True, help="reset seed of the episodes")
def rollout(run_dir, method, param, theta0, v_target, theta, episodes, seed, env_seed):
    """Run a trained control model's zero-shot policy for a reward; print its returns."""
    import resolvent
    from resolvent.evaluation import actor_returns, episodic_returns
    from resolvent.policies import load_target_policy

    if episodes < 1:
        fail(f"--episodes must be >= 1, got {episodes}")
    if env_seed < 0:
        fail(f"--env-seed must be >= 0, got {env_seed}")
    cfg = read_run_config(run_dir)
    if cfg.get("task") != "optimize" or cfg.get("family") is None:
        fail(f"{run_dir} is not an optimize run on a family: `rollout` acts with a control model "
             f"(`resolvent optimize`); from Python, resolvent.load(RUN, METHOD).policy(reward) on such a run")
    family = get_family(cfg["family"])
    value = reward_param(family, param=param, theta0=theta0, v_target=v_target, theta=theta)
    if not np.isfinite(value):
        fail(f"the reward parameter must be finite, got {value}")
    try:
        policy = resolvent.load(run_dir, method).policy(family.reward_callable(value), seed=seed)
    except EXPECTED as e:
        fail(str(e))
    reward = family.reward_callable(value)
    ret = episodic_returns(family, lambda obs: policy(obs[0])[None], [reward], episodes, env_seed,
                           f"{method} policy")[0]
    click.echo(f"{family.name}, {family.param_name} = {value}, method {method}, network seed {seed}")
    click.echo("returns: " + " ".join(f"{r:.1f}" for r in ret) + f"   mean {ret.mean():.1f}")
    try:
        target = actor_returns(family, load_target_policy(family.name), [reward], episodes, env_seed)[0]
        click.echo(f"TD3 target policy under the same reward: mean {target.mean():.1f}")
    except FileNotFoundError:
        pass


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--kinds", default="offline,td3", show_default=True,
              help="offline: the same offline algorithm on data relabelled with the reward alone; "
                   "td3: TD3 online on that reward (needs resolvent[train])")
@click.option("--td3-steps", type=int, default=None, help="TD3 steps [default: the family's]")
@click.option("--methods", default=None, help="offline: critics to train [default: the run's]")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="where to write them [default: RUN_DIR/baselines]")
def baselines(run_dir, kinds, td3_steps, methods, out):
    """Single-reward baselines for an optimize run's test rewards: what zero-shot transfer costs."""
    from resolvent.experiments import OptimizeConfig
    from resolvent.experiments.baselines import run_baselines
    from resolvent.experiments.rundir import RunDir

    out = out or str(Path(run_dir) / "baselines")
    try:
        cfg = OptimizeConfig.from_dict(RunDir(run_dir).read_config())
        if methods:
            cfg = dataclasses.replace(cfg, methods=split_methods(methods))
        summary = run_baselines(cfg, out, tuple(k.strip() for k in kinds.split(",") if k.strip()),
                                td3_steps, zero_shot=run_dir)
    except EXPECTED as e:
        fail(str(e))
    click.echo(f"{summary['family']} / {summary['dataset']}: return under each test reward "
               f"(mean ± std over seeds)")
    for name, entry in summary["rewards"].items():
        click.echo(name)
        for who, v in entry.items():
            click.echo(f"  {who:<36} {np.mean(v):>9.1f} ± {np.std(v):.1f}")
    click.echo(f"summary: {Path(out) / 'baselines.json'}")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("reference_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--against", default="fqe", show_default=True, help="the reference's answer")
@click.option("--rewards", default="probe", show_default=True, type=click.Choice(["probe", "test", "train", "heldout"]),
              help="the reward set")
@click.option("--methods", default="", help="RUN_DIR's answers compared, comma-separated [default: every one]")
@click.option("--show", default="", help="the answers drawn in compare.png [default: the run's default answer]")
@click.option("--within", default=1.5, show_default=True,
              help="the bound counted: an MSE at most this many times the reference's")
@click.option("--reps", default=2000, show_default=True, help="bootstrap draws of the points")
@click.option("--seed", default=0, show_default=True, help="the draws' seed")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="where compare.md and compare.png go [default: RUN_DIR]")
def compare(run_dir, reference_dir, against, rewards, methods, show, within, reps, seed, out):
    """Every answer of RUN_DIR against a reference at the same points, reward by reward: the MSE
    over the reference's (per-reward FQE: a run of --methods fqe --oracle-rewards probe on the same
    family, dataset and seed as REFERENCE_DIR, or RUN_DIR's own fqe), with a 95% paired bootstrap
    interval over the points, at every kind of points; compare.md and compare.png."""
    from resolvent.experiments.compare import compare as compare_runs
    from resolvent.experiments.compare import write

    try:
        found = compare_runs(run_dir, reference_dir, against, rewards, split_methods(methods), within, reps, seed)
        written = write(found, out or run_dir, list(split_methods(show)))
    except EXPECTED as e:
        fail(str(e))
    click.echo(written["compare.md"].read_text())
    for path in written.values():
        click.echo(path)


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def plot(run_dir):
    """Redraw a run's plot from its files."""
    from resolvent.experiments import plot_run

    read_run_config(run_dir)
    try:
        click.echo(plot_run(run_dir))
    except EXPECTED as e:
        fail(str(e))


@main.command()
@click.argument("spec", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="the sweep's folder [default: the spec's `out`, else runs/SPEC-NAME]")
@click.option("--engine", type=click.Choice(["ray", "local"]), default="ray", show_default=True,
              help="ray: Ray tasks (a local Ray, or --address); local: processes of this machine, no Ray needed")
@click.option("--address", default=None,
              help="a Ray cluster to run on (HOST:PORT, ray://HOST:PORT or auto) [default: a local Ray]")
@click.option("--max-concurrent", type=int, default=None,
              help="runs at once [default: the GPUs x --tasks-per-gpu, else the CPUs]")
@click.option("--tasks-per-gpu", type=click.IntRange(min=1), default=1, show_default=True,
              help="runs sharing each GPU (a run's kernels are small: nine HalfCheetah control runs on one "
                   "H200 made 8.5x the steps of one; start CUDA MPS first, `nvidia-cuda-mps-control -d`)")
@click.option("--retries", default=3, show_default=True, help="times a run whose worker died is retried (resuming)")
@click.option("--dry-run", is_flag=True, help="list the runs and their state; run nothing")
def sweep(spec, out, engine, address, max_concurrent, tasks_per_gpu, retries, dry_run):
    """Run a grid of evaluate/optimize runs (a TOML SPEC) as Ray tasks, or processes of this
    machine (--engine local), one run directory per cell and seed; finished runs are skipped,
    killed ones resume from their checkpoints."""
    from resolvent.experiments.local import run_local
    from resolvent.experiments.spec import load_spec, run_state
    if engine == "local" and address:
        fail("--address names a Ray cluster: it needs --engine ray")
    try:
        grid = load_spec(spec, out)
        if dry_run:        # reads the folders only: no Ray needed
            for run in grid.runs:
                click.echo(f"{run_state(run):<7} {run.path}")
            return
        if engine == "ray":
            try:
                from resolvent.experiments.sweep import run_sweep
            except ImportError as e:
                fail(f"`resolvent sweep` needs Ray ({e}): pip install 'resolvent[sweep]', or --engine local")
        click.echo(f"sweep: {len(grid.runs)} runs of {grid.task} in {grid.out} ({engine})")
        if engine == "ray":
            summary = run_sweep(grid, address, max_concurrent, retries, tasks_per_gpu=tasks_per_gpu)
        else:
            summary = run_local(grid, max_concurrent, retries, tasks_per_gpu=tasks_per_gpu)
    except EXPECTED as e:
        fail(str(e))
    click.echo(f"{len(summary.ran)} ran, {len(summary.resumed)} resumed, "
               f"{len(summary.skipped)} already finished, {len(summary.failed)} failed")
    if summary.failed:
        fail("failed runs:\n" + "\n".join(f"  {path}: {why}" for path, why in summary.failed.items()))
    click.echo(f"report: resolvent report {grid.out}")


@main.command()
@click.argument("sweep_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="where to write [default: SWEEP_DIR; several folders need one of their own]")
@click.option("--reps", default=2000, show_default=True, help="bootstrap samples of the intervals")
@click.option("--copy-runs", is_flag=True, help="also copy every finished run's config, metrics and results to --out")
@click.option("--cells", multiple=True, metavar="PATTERN",
              help="only the cells whose names match (shell-style, e.g. 'ant-dir-*'; repeatable)")
def report(sweep_dirs, out, reps, copy_runs, cells):
    """IQM over seeds with 95% stratified-bootstrap intervals (rliable), per cell and method:
    report.md, report.csv and the OPE (or OPI) figure with those intervals. Several SWEEP_DIRS
    (one grid run by several specs) make one report in --out, with a sweep.json that joins them."""
    try:
        from resolvent.experiments.report import report as write_report
    except ImportError as e:
        fail(f"`resolvent report` needs rliable ({e}): pip install 'resolvent[sweep]'")
    try:
        written = write_report(list(sweep_dirs), out, reps, copy=copy_runs, cells=list(cells))
    except EXPECTED as e:
        fail(str(e))
    click.echo(written["report.md"].read_text())
    for path in written.values():
        click.echo(path)


@main.group()
def figure():
    """The paper's figures, drawn from finished runs."""


def figure_command(name: str, task: str, drawer: str, doc: str):
    """``resolvent figure NAME``: draw ``plots.<drawer>`` from the finished ``task`` runs."""
    @figure.command(name, help=doc)
    @click.option("--runs", default="results", show_default=True, type=click.Path(file_okay=False),
                  help=f"folder searched (recursively) for finished {task} runs")
    @click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False))
    def command(runs, out):
        from resolvent.experiments import plots

        try:
            click.echo(getattr(plots, drawer)(runs, out))
        except EXPECTED as e:
            fail(str(e))

    return command


figure_command("ope", "evaluate", "figure_ope",
               "Offline policy evaluation: rows = families, columns = datasets x training/test rewards.")
figure_command("opi", "optimize", "figure_opi",
               "Offline policy optimisation: one panel per family, return against steps.")
figure_command("transfer", "baselines", "figure_transfer",
               "What zero-shot transfer costs: test-reward returns, zero-shot against single-reward "
               "baselines (from `resolvent baselines` summaries).")


if __name__ == "__main__":
    main()
