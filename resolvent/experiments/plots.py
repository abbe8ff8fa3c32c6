"""Plots read run files: average MSE against training steps, mean and spread over seeds."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from resolvent.experiments.rundir import RunDir  # noqa: E402

LABELS = {"attention": "Attention operator", "linear": "Linear operator",
          "vanilla": "Vanilla operator", "sf": "Successor features"}
COLORS = {"attention": "tab:red", "linear": "tab:blue", "vanilla": "tab:green", "sf": "tab:gray"}


def curves(rows: list[dict], metric: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """method -> (steps (T,), values (S, T)) from metrics rows."""
    by = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        by[r["method"]][r["seed"]][r["step"]] = r[metric]
    out = {}
    for method, seeds in by.items():
        steps = sorted(set.intersection(*(set(s) for s in seeds.values())))
        out[method] = (np.array(steps), np.array([[s[t] for t in steps] for s in seeds.values()]))
    return out


def draw(ax, rows: list[dict], metric: str, title: str) -> None:
    for method, (steps, vals) in curves(rows, metric).items():
        logv = np.log10(np.maximum(vals, 1e-12))              # spread on the log scale
        mean, std = logv.mean(0), logv.std(0)
        ax.plot(steps, 10**mean, label=LABELS.get(method, method), color=COLORS.get(method))
        ax.fill_between(steps, 10 ** (mean - std), 10 ** (mean + std), alpha=0.2,
                        color=COLORS.get(method))
    ax.set_yscale("log")
    ax.set_xlabel("training steps")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)


def plot_mse(run_dir: str | Path, name: str = "mse.png") -> Path:
    """Training and test rewards side by side, as in the paper's OPE figure."""
    run = RunDir(run_dir)
    cfg = json.loads(run.config_path.read_text())
    rows = run.read_metrics()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    draw(axes[0], rows, "train_mse", f"{cfg['family']} / {cfg['dataset']}: training rewards")
    draw(axes[1], rows, "test_mse", f"{cfg['family']} / {cfg['dataset']}: test rewards")
    axes[0].set_ylabel("average MSE (geometric mean over seeds)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    path = run.path / name
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


FAMILY_ORDER = ("pendulum-angle", "halfcheetah-vel", "ant-dir")
KIND_ORDER = ("replay", "expert", "medium")


def find_runs(root: str | Path, task: str = "evaluate") -> dict[tuple[str, str], Path]:
    """(family, dataset) -> run directory, for every finished run of ``task`` under ``root``."""
    runs = {}
    for cfg_path in sorted(Path(root).rglob("config.json")):
        try:
            cfg = json.loads(cfg_path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(cfg, dict) or cfg.get("task", "evaluate") != task or "family" not in cfg:
            continue
        if (cfg_path.parent / "metrics.jsonl").is_file():
            runs[(cfg["family"], cfg["dataset"])] = cfg_path.parent
    return runs


def figure_ope(root: str | Path, out: str | Path, name: str = "ope.png") -> Path:
    """The paper's OPE figure from finished runs: one row per family, columns
    replay/expert/medium x training/test rewards, MSE against steps, one line per method."""
    runs = find_runs(root)
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
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
