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
