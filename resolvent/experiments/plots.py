"""Plots read run files: average MSE (evaluate) or episodic return (optimize) against training
steps, mean and spread over seeds."""
from __future__ import annotations

import io
import json
import warnings
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from resolvent.experiments.rundir import RunDir, finished  # noqa: E402
from resolvent.io import atomic_write_bytes  # noqa: E402
from resolvent.model import AUTO, CheckpointError, read_run_json, split_method  # noqa: E402

LABELS = {"attention": "Attention operator", "linear": "Linear operator",
          "vanilla": "Vanilla operator", "sf": "Successor features", "maxout": "Max-out operator",
          "fqe": "FQE per reward (oracle)"}
COLORS = {"attention": "tab:red", "linear": "tab:blue", "vanilla": "tab:green", "sf": "tab:gray",
          "maxout": "tab:red", "fqe": "black"}


def curves(rows: list[dict], metric: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """method -> (steps (T,), values (S, T)) from metrics rows."""
    by = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if r.get(metric) is not None:
            by[r["method"]][r["seed"]][r["step"]] = r[metric]
    out = {}
    for method, seeds in by.items():
        steps = sorted(set.intersection(*(set(s) for s in seeds.values())))
        out[method] = (np.array(steps), np.array([[s[t] for t in steps] for s in seeds.values()]))
    return out


def draw(ax, rows: list[dict], metric: str, title: str) -> None:
    """MSE on a log scale (geometric mean and spread over seeds), or R^2 on a linear scale
    (arithmetic mean and std, clipped below at -1: below 0 is worse than a constant)."""
    r2 = metric.endswith("_r2")
    for method, (steps, vals) in curves(rows, metric).items():
        style = dict(color=COLORS.get(method), ls="--" if method == "fqe" else "-")
        if r2:
            mean, lo, hi = vals.mean(0), vals.mean(0) - vals.std(0), vals.mean(0) + vals.std(0)
        else:
            logv = np.log10(np.maximum(vals, 1e-12))          # spread on the log scale
            mean, lo, hi = (10 ** v for v in (logv.mean(0), logv.mean(0) - logv.std(0),
                                              logv.mean(0) + logv.std(0)))
        ax.plot(steps, mean, label=LABELS.get(method, method), **style)
        ax.fill_between(steps, lo, hi, alpha=0.2, color=style["color"])
    if r2:
        ax.set_ylim(-1.0, 1.02)
        ax.axhline(0.0, color="k", lw=0.6)
    else:
        ax.set_yscale("log")
    ax.set_xlabel("training steps")
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v else "0"))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


def legend_of(axes) -> tuple[list, list]:
    """The handles and labels of every axis, each label once."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    return handles, labels


def plot_mse(run_dir: str | Path, name: str = "mse.png") -> Path:
    """MSE (top) and R^2 (bottom) for the training, test and out-of-family probe rewards, as
    in the paper's OPE figure plus the probes; the per-reward FQE oracle dashed."""
    run = RunDir(run_dir)
    cfg = run.read_config()
    rows = run.read_metrics()
    sets = [s for s in ("train", "test", "probe") if any(r.get(f"{s}_mse") is not None for r in rows)]
    if not sets:   # no ground truth: the Bellman residual along training, and the trust report's agreement
        trust = any(r.get("trust_rel_rmse") is not None for r in rows)
        panels = 3 if trust else 1   # the residual along training; the trust report's two signals
        fig, axes = plt.subplots(1, panels, figsize=(5.5 * panels, 4.0), squeeze=False)
        draw(axes[0, 0], [r for r in rows if r.get("loss") is not None], "loss",
             f"{cfg.get('data')}: no ground truth, Bellman residual")
        if trust:
            draw(axes[0, 1], rows, "trust_rel_rmse", "held-out rewards: relative RMSE against per-reward FQE")
            draw(axes[0, 2], rows, "trust_bellman", "held-out rewards: Bellman residual on the data (rel.)")
        axes[0, 0].legend(fontsize=8)
        fig.tight_layout()
        return save_figure(fig, run.path / name)
    kinds = [(k, prefix) for k, prefix in (("trajectory", "traj_"), ("dataset", "data_"))
             if any(r.get(f"{prefix}{s}_rel_rmse") is not None for r in rows for s in sets)]
    fig, axes = plt.subplots(2 + len(kinds), len(sets), figsize=(4.6 * len(sets), 3.5 * (2 + len(kinds))),
                             squeeze=False)
    titles = {"train": "training rewards", "test": "test rewards", "probe": "probe rewards (out of family)"}
    for j, s in enumerate(sets):
        head = f"{cfg['family'] or cfg.get('data')} / {cfg['dataset'] if cfg['family'] else 'data'}: {titles[s]}"
        draw(axes[0, j], rows, f"{s}_mse", head)
        draw(axes[1, j], rows, f"{s}_r2", head)
        for i, (kind, prefix) in enumerate(kinds):
            draw(axes[2 + i, j], rows, f"{prefix}{s}_rel_rmse", f"{titles[s]}, {kind} points")
    axes[0, 0].set_ylabel("average MSE (geometric mean over seeds)")
    axes[1, 0].set_ylabel("average R$^2$ (1 - MSE / Var of the truth)")
    for i, (kind, _) in enumerate(kinds):
        axes[2 + i, 0].set_ylabel(f"relative RMSE at {kind} points")
    axes[0, -1].legend(*legend_of(axes.flat), fontsize=8)
    fig.tight_layout()
    return save_figure(fig, run.path / name, dpi=120)


def shown_in_scatter(methods: list[str]) -> list[str]:
    """The methods a scatter plot draws: every one but the expansions, and of an operator's
    expansions (predictions.npz holds them all) the longest fixed horizon."""
    longest: dict[str, int] = {}
    for m in methods:
        base, k = split_method(m)
        if k != AUTO and k > 0:
            longest[base] = max(longest.get(base, 0), k)
    return [m for m in methods if split_method(m)[1] == 0 or split_method(m) in longest.items()]


def plot_scatter(run_dir: str | Path, name: str = "scatter.png") -> Path | None:
    """Predicted against true Q (mean over seeds), one panel per reward set and point kind, one
    colour per method, from ``predictions.npz`` (None where the run has none)."""
    run = RunDir(run_dir)
    path = run.path / "predictions.npz"
    if not path.is_file():
        return None
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    panels = sorted({tuple(k.split("|")[1:3]) for k in arrays},
                    key=lambda sk: (SET_ORDER.index(sk[0]) if sk[0] in SET_ORDER else 9,
                                    KIND_POINTS.index(sk[1]) if sk[1] in KIND_POINTS else 9))
    if not panels:
        return None
    methods = shown_in_scatter(list(dict.fromkeys(k.split("|")[0] for k in arrays)))
    cols = min(4, len(panels))
    rows_n = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(3.6 * cols, 3.4 * rows_n), squeeze=False)
    for ax, (s, kind) in zip(axes.flat, panels):
        lo, hi = np.inf, -np.inf
        for m in methods:
            key = f"{m}|{s}|{kind}"
            if f"{key}|pred" not in arrays:
                continue
            t, q = arrays[f"{key}|truth"].ravel(), arrays[f"{key}|pred"].ravel()
            ax.scatter(t, q, s=5, alpha=0.5, color=COLORS.get(m), label=LABELS.get(m, m))
            lo, hi = min(lo, t.min(), q.min()), max(hi, t.max(), q.max())
        if np.isfinite(lo):
            ax.plot([lo, hi], [lo, hi], color="k", lw=0.6)
        truth = "per-reward FQE" if kind == "trust" else "Monte-Carlo"
        ax.set_title(f"{s} rewards, {kind} points", fontsize=9)
        ax.set_xlabel(f"true Q ({truth})", fontsize=8)
        ax.set_ylabel("predicted Q", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_axis_off()
    axes[0, 0].legend(*legend_of(axes.flat), fontsize=7)
    fig.tight_layout()
    return save_figure(fig, run.path / name, dpi=100)


def plot_evaluate(run_dir: str | Path) -> Path:
    """An evaluate run's plots: ``mse.png`` (returned) and ``scatter.png``."""
    plot_scatter(run_dir)
    return plot_mse(run_dir)


SET_ORDER = ("train", "test", "probe", "heldout")
KIND_POINTS = ("reset", "trajectory", "dataset", "trust")
FAMILY_ORDER = ("pendulum-angle", "halfcheetah-vel", "ant-dir")
KIND_ORDER = ("replay", "expert", "medium")


def find_runs(root: str | Path, task: str = "evaluate", keep=None) -> dict[tuple[str, str], Path]:
    """(family, dataset) -> run directory, for every finished run of ``task`` under ``root``
    (whose config passes ``keep``, when given): every method trained to the run's steps. Several
    finished runs of one (family, dataset) are reported (a warning); the last in path order is kept."""
    runs, seen = {}, {}
    for cfg_path in sorted(Path(root).rglob("config.json")):
        try:
            cfg = json.loads(cfg_path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(cfg, dict) or cfg.get("task", "evaluate") != task or not cfg.get("family"):
            continue
        if keep is not None and not keep(cfg):
            continue
        if (cfg_path.parent / "metrics.jsonl").is_file() and run_finished(cfg_path.parent, cfg):
            runs[(cfg["family"], cfg["dataset"])] = cfg_path.parent
            seen.setdefault((cfg["family"], cfg["dataset"]), []).append(str(cfg_path.parent))
    for (fam, kind), paths in seen.items():
        if len(paths) > 1:
            warnings.warn(f"{len(paths)} finished {task} runs of {fam} / {kind}: {paths}; drawing {paths[-1]}",
                          stacklevel=2)
    return runs


def run_finished(path: Path, cfg: dict) -> bool:
    """Whether the run at ``path`` is finished (``rundir.finished``); False where its results.json
    cannot be read."""
    try:
        return finished(cfg, RunDir(path).read_results())
    except (OSError, ValueError, KeyError, TypeError, CheckpointError):
        return False


def figure_ope(root: str | Path, out: str | Path, name: str = "ope.png") -> Path:
    """The paper's OPE figure from finished runs (a run on the family prior, the paper's setting,
    wins over others of the same family and dataset): one row per family, columns
    replay/expert/medium x training/test rewards, MSE against steps, one line per method."""
    runs = find_runs(root)
    runs.update(find_runs(root, keep=lambda cfg: cfg.get("fqe", {}).get("prior", {}).get("kind", "family") == "family"))
    if not runs:
        raise FileNotFoundError(f"no finished evaluate runs (config.json + metrics.jsonl) under {root}")
    families = [f for f in FAMILY_ORDER if any(k[0] == f for k in runs)]
    families += sorted({k[0] for k in runs} - set(families))
    kinds = [k for k in KIND_ORDER if any(r[1] == k for r in runs)]
    fig, axes = plt.subplots(len(families), 2 * len(kinds), squeeze=False,
                             figsize=(3.2 * 2 * len(kinds), 2.9 * len(families)))
    for i, fam in enumerate(families):
        for j, kind in enumerate(kinds):
            for c, (metric, which) in enumerate((("train_mse", "train"), ("test_mse", "test"))):
                ax = axes[i, 2 * j + c]
                if (fam, kind) not in runs:
                    ax.set_axis_off()
                    ax.set_title(f"{fam} / {kind}: no run", fontsize=9)
                    continue
                draw(ax, RunDir(runs[(fam, kind)]).read_metrics(), metric, f"{fam} / {kind} / {which}")
                if c == 0 and j == 0:
                    ax.set_ylabel("MSE")
    handles, labels = legend_of(axes.flat)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save_figure(fig, Path(out) / name)


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Write ``fig`` to ``path`` (creating its folder; atomically) and close it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path


def draw_returns(ax, rows: list[dict], reward: str, reference: float | None, title: str) -> None:
    """Return under ``reward`` ("original" or a test reward's name): mean and std over seeds."""
    picked = [{**r, "value": r["return"] if reward == "original" else r["test_returns"][reward]}
              for r in rows if reward == "original" or reward in r.get("test_returns", {})]
    for method, (steps, vals) in curves(picked, "value").items():
        mean, std = vals.mean(0), vals.std(0)
        ax.plot(steps, mean, label=LABELS.get(method, method), color=COLORS.get(method))
        ax.fill_between(steps, mean - std, mean + std, alpha=0.2, color=COLORS.get(method))
    if reference is not None:
        ax.axhline(reference, color="k", ls="--", lw=1, label="TD3 target policy")
    ax.set_xlabel("training steps")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


def plot_returns(run_dir: str | Path, name: str = "returns.png") -> Path:
    """Episodic return along training under the original and each logged test reward, as in
    the paper's policy-optimisation figure, with the TD3 target policy as a reference line."""
    run = RunDir(run_dir)
    cfg = run.read_config()
    res = run.read_results()
    rows = run.read_metrics()
    tests = sorted({k for r in rows for k in r.get("test_returns", {})},
                   key=lambda k: float(k.split("=")[-1]) if "=" in k else 0.0)
    panels = ["original", *tests]
    refs = {"original": res.get("target_return"), **res.get("target_test_returns", {})}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, reward in zip(axes[0], panels):
        label = "original reward" if reward == "original" else f"test reward {reward}"
        draw_returns(ax, rows, reward, refs.get(reward), f"{cfg['family']} / {cfg['dataset']}\n{label}")
    axes[0][0].set_ylabel("episodic return (mean ± std over seeds)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, run.path / name, dpi=120)


def plot_run(run_dir: str | Path) -> Path:
    """The plot of a run directory, whichever its task."""
    cfg = RunDir(run_dir).read_config()
    return plot_returns(run_dir) if cfg.get("task") == "optimize" else plot_evaluate(run_dir)


def figure_opi(root: str | Path, out: str | Path, name: str = "opi.png") -> Path:
    """The paper's policy-optimisation figure from finished optimize runs: one panel per
    family, episodic return under the original reward against steps, max-out and vanilla
    (mean and std over seeds), the TD3 target policy as a dashed line. Single-reward
    baseline runs (fixed ``train_params``) are left out."""
    runs = find_runs(root, "optimize", keep=lambda cfg: not cfg.get("train_params"))
    if not runs:
        raise FileNotFoundError(f"no finished optimize runs (config.json + metrics.jsonl) under {root}")
    keys = sorted(runs, key=lambda k: (FAMILY_ORDER.index(k[0]) if k[0] in FAMILY_ORDER else 9, k[1]))
    fig, axes = plt.subplots(1, len(keys), figsize=(4.4 * len(keys), 3.6), squeeze=False)
    for ax, key in zip(axes[0], keys):
        ref = RunDir(runs[key]).read_results().get("target_return")
        draw_returns(ax, RunDir(runs[key]).read_metrics(), "original", ref, f"{key[0]} / {key[1]}")
    axes[0][0].set_ylabel("episodic return (original reward)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, Path(out) / name)


def figure_transfer(root: str | Path, out: str | Path, name: str = "transfer.png") -> Path:
    """What zero-shot transfer costs: for every ``baselines.json`` under ``root`` (one panel per
    family), the final return under each logged test reward of the zero-shot operator
    policies, of the policies trained for that reward alone, and of the TD3 target policy
    (trained for the original reward); bars are means over seeds, whiskers their std."""
    found = {}
    for path in sorted(Path(root).rglob("baselines.json")):
        summary = read_run_json(path)
        if summary.get("rewards"):
            found.setdefault((summary["family"], summary["dataset"]), summary)
    if not found:
        raise FileNotFoundError(f"no baselines.json with returns under {root}")
    keys = sorted(found, key=lambda k: (FAMILY_ORDER.index(k[0]) if k[0] in FAMILY_ORDER else 9, k[1]))
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 4.0), squeeze=False)
    for ax, key in zip(axes[0], keys):
        rewards = found[key]["rewards"]
        names = sorted(rewards, key=lambda k: float(k.split("=")[-1]) if "=" in k else 0.0)
        whos = sorted({w for n in names for w in rewards[n]}, key=transfer_order)
        width = 0.8 / len(whos)
        for i, who in enumerate(whos):
            vals = [rewards[n].get(who) for n in names]
            xs = [j + (i - (len(whos) - 1) / 2) * width for j, v in enumerate(vals) if v]
            ax.bar(xs, [np.mean(v) for v in vals if v], width, yerr=[np.std(v) for v in vals if v],
                   label=transfer_label(who), color=transfer_color(who), capsize=2)
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.axhline(0, color="k", lw=0.5)
        ax.set_title(f"{key[0]} / {key[1]}: test rewards", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("episodic return under the test reward")
    handles = {}
    for ax in axes[0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles), fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return save_figure(fig, Path(out) / name)


def transfer_order(who: str) -> tuple:
    """Zero-shot operators first, then the single-reward baselines, then the target policy."""
    rank = 0 if who.startswith("zero-shot") else 1 if "this reward only" in who else 2
    return rank, who


def transfer_label(who: str) -> str:
    if who.startswith("zero-shot "):
        method = who.removeprefix("zero-shot ")
        return f"{LABELS.get(method, method)}, zero-shot"
    return who


def transfer_color(who: str) -> str | None:
    if who.startswith("zero-shot "):
        return COLORS.get(who.removeprefix("zero-shot "))
    if "this reward only" in who:
        return "tab:orange" if who.startswith("td3") else "tab:purple" if "maxout" in who else "tab:brown"
    return "tab:gray"
