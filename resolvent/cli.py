"""The ``resolvent`` command line."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import numpy as np

from resolvent.families import FAMILIES, get_family

FAMILY = click.Choice(sorted(FAMILIES))


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def results_table(results: dict) -> str:
    lines = [f"{results['family']} / {results['dataset']}: MSE at the ground-truth initial points "
             f"(mean ± std over seeds)",
             f"{'method':<10} {'train MSE':>22} {'test MSE':>22} {'steps':>7} {'seconds':>8}"]
    for method, r in results["methods"].items():
        tr, te = np.asarray(r["train_mse"]), np.asarray(r["test_mse"])
        lines.append(f"{method:<10} {tr.mean():>12.4g} ± {tr.std():<8.3g} {te.mean():>12.4g} ± "
                     f"{te.std():<8.3g} {r['steps']:>7} {r['seconds']:>8.1f}")
    return "\n".join(lines)


@click.group()
@click.version_option(package_name="resolvent")
def main() -> None:
    """Zero-shot reward transfer with operator deep Q-learning (Tang, Feng, Liu)."""


@main.command()
@click.argument("family", type=FAMILY, default="pendulum-angle")
@click.option("--dataset", default="expert", show_default=True, help="replay, expert or medium")
@click.option("--methods", default="attention,linear,vanilla,sf", show_default=True,
              help="comma-separated: attention, linear, vanilla, sf")
@click.option("--seeds", default=3, show_default=True, help="network seeds (trained at once)")
@click.option("--seed", default=0, show_default=True, help="experiment seed")
@click.option("--steps", default=15_000, show_default=True, help="training steps per method")
@click.option("--log-every", default=500, show_default=True)
@click.option("--checkpoint-every", default=2_500, show_default=True)
@click.option("--m", "m", default=128, show_default=True, help="reference points")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="run directory [default: runs/FAMILY-DATASET-TIME]")
@click.option("--resume", is_flag=True, help="continue the run in --out from its last checkpoint")
def evaluate(family, dataset, methods, seeds, seed, steps, log_every, checkpoint_every, m, out, resume):
    """Offline policy evaluation: train operators and compare with the ground truth."""
    from resolvent.experiments import EvaluateConfig, run_evaluate

    if resume and out is None:
        fail("--resume needs --out, the run directory to continue")
    out = out or f"runs/{family}-{dataset}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        cfg = EvaluateConfig(family=family, dataset=dataset,
                             methods=tuple(x.strip() for x in methods.split(",") if x.strip()),
                             seeds=seeds, seed=seed, steps=steps, log_every=log_every,
                             checkpoint_every=checkpoint_every, m=m)
        click.echo(f"run directory: {out}")
        results = run_evaluate(cfg, out, resume=resume)
    except (ValueError, FileExistsError, FileNotFoundError, RuntimeError) as e:
        fail(str(e))
    click.echo(results_table(results))
    click.echo(f"results: {Path(out) / 'results.json'}   plot: {Path(out) / 'mse.png'}")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--method", default="attention", show_default=True)
@click.option("--param", type=float, default=None, help="the family's reward parameter")
@click.option("--theta0", type=float, default=None, help="Pendulum-Angle's target angle")
@click.option("--v-target", type=float, default=None, help="HalfCheetah-Vel's target velocity")
@click.option("--theta", type=float, default=None, help="Ant-Dir's direction")
@click.option("--points", default=10, show_default=True, help="initial points to print")
def q(run_dir, method, param, theta0, v_target, theta, points):
    """Zero-shot Q-values of a trained operator at the ground-truth initial points."""
    import resolvent
    from resolvent.evaluation import load_ground_truth
    from resolvent.policies import load_target_policy

    cfg = json.loads((Path(run_dir) / "config.json").read_text())
    family = get_family(cfg["family"])
    given = {"param": param, "theta0": theta0, "v_target": v_target, "theta": theta}
    chosen = {k: v for k, v in given.items() if v is not None}
    if len(chosen) != 1:
        fail(f"give exactly one reward parameter (--{family.param_name.replace('_', '-')})")
    (name, value), = chosen.items()
    if name not in ("param", family.param_name):
        fail(f"--{name.replace('_', '-')} is not a parameter of {family.name}; "
             f"its parameter is --{family.param_name.replace('_', '-')}")
    try:
        model = resolvent.load(run_dir, method)
    except (FileNotFoundError, RuntimeError) as e:
        fail(str(e))
    gt = load_ground_truth(family, load_target_policy(family.name), cfg["n_initial"], cfg["gamma"],
                           cfg["gt_tol"], cfg["data_seed"])
    reward = family.reward_callable(value)
    qs = model.q_values(reward, gt.obs0, gt.action0, seed=None)      # (S, n)
    truth = gt.q(reward)
    click.echo(f"{family.name}, {family.param_name} = {value}, method {method} "
               f"({model.n_seeds} seeds): Q at initial points (s0, a0)")
    click.echo(f"{'i':>3} {'predicted (mean over seeds)':>28} {'Monte-Carlo truth':>18}")
    for i in range(min(points, len(truth))):
        click.echo(f"{i:>3} {qs[:, i].mean():>28.3f} {truth[i]:>18.3f}")
    click.echo(f"MSE over all {len(truth)} initial points: {np.mean((qs.mean(0) - truth) ** 2):.4g}")


@main.command()
@click.argument("family", type=FAMILY)
@click.option("--retrain", is_flag=True, help="train TD3 again (needs resolvent[train])")
@click.option("--steps", type=int, default=None, help="TD3 steps [default: the family's]")
@click.option("--seed", default=0, show_default=True)
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="where to write the weights [default: inside the package]")
def target(family, retrain, steps, seed, out):
    """Show (or --retrain) the family's TD3 target policy and its average return."""
    from resolvent.policies import load_target_policy, target_policy_info
    from resolvent.policies.td3 import evaluate_actor, train_td3

    fam = get_family(family)
    if retrain:
        _, meta = train_td3(fam, steps=steps, seed=seed, out_dir=out)
        click.echo(json.dumps(meta, indent=2))
        return
    try:
        actor = load_target_policy(fam.name)
    except FileNotFoundError as e:
        fail(str(e))
    info = target_policy_info(fam.name)
    ret = evaluate_actor(actor, fam.env_id)
    click.echo(json.dumps({**info, "average_return_now": ret}, indent=2))


@main.command()
@click.argument("family", type=FAMILY)
@click.option("--kind", default="expert", show_default=True, help="replay, expert or medium")
@click.option("--seed", default=0, show_default=True)
@click.option("--rebuild", is_flag=True)
def dataset(family, kind, seed, rebuild):
    """Build (or load) an offline dataset, stored in the Minari format."""
    from resolvent.data import dataset_id, load_transitions

    fam = get_family(family)
    try:
        data = load_transitions(fam, kind, seed, rebuild=rebuild)
    except (ValueError, FileNotFoundError) as e:
        fail(str(e))
    n = len(data["obs"])
    click.echo(f"{dataset_id(fam, kind, seed)}: {n} transitions, "
               f"{int(data['terminated'].sum())} terminated, {int(data['truncated'].sum())} truncated; "
               f"load with minari.load_dataset({dataset_id(fam, kind, seed)!r})")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def plot(run_dir):
    """Redraw a run's plot from its files."""
    from resolvent.experiments import plot_mse

    click.echo(plot_mse(run_dir))


@main.group()
def figure():
    """The paper's figures, drawn from finished runs."""


@figure.command("ope")
@click.option("--runs", default="results", show_default=True, type=click.Path(file_okay=False),
              help="folder searched (recursively) for finished evaluate runs")
@click.option("--out", default="results", show_default=True, type=click.Path(file_okay=False))
def figure_ope_command(runs, out):
    """Offline policy evaluation: rows = families, columns = datasets x training/test rewards."""
    from resolvent.experiments.plots import figure_ope

    try:
        click.echo(figure_ope(runs, out))
    except FileNotFoundError as e:
        fail(str(e))


if __name__ == "__main__":
    main()
