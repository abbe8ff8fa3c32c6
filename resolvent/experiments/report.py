"""Aggregates of a sweep over seeds: ``resolvent report SWEEP_DIR [SWEEP_DIR ...]``.

Per cell and method, every metric's interquartile mean (IQM: the mean of the middle 50% of the
seeds' values, rliable's ``aggregate_iqm``) with a 95% stratified-bootstrap confidence interval
(rliable's ``get_interval_estimates``; one task per cell, so the bootstrap resamples the seeds).
Written as one table, ``report.md`` and ``report.csv``, and as the paper's figures with those
intervals: ``ope.png`` (evaluate sweeps: rows families, columns datasets x training/test
rewards, MSE along training) or ``opi.png`` (optimize sweeps: return under the original reward
along training), one figure per value of the axes other than family and dataset.

Scores: evaluate, the final MSE and R^2 on the training, test and probe rewards; optimize, the
final return under the original reward and the mean return over the run's test rewards. A cell's
methods are those its runs scored: an operator's expansions (``fb+k400``, ``fb+kauto``) get rows
of the table too (not lines of the figure: they have no training curve).

A grid run by several specs into several folders (``results/ope-*``) is reported as one with
``--out``: the folders' cells in one table and one set of figures, and a ``sweep.json`` in
``--out`` that joins their manifests (the runs' paths relative to it, or copied into it with
``--copy-runs``), so ``resolvent report OUT`` draws it again. Each interval's bootstrap is seeded
from its cell, method and metric's names: one cell, one interval, in every report that holds it,
whatever else is reported beside it.
"""
from __future__ import annotations

import csv
import fnmatch
import hashlib
import io
import os
import shutil
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from rliable import library as rly  # noqa: E402

from resolvent.experiments.plots import COLORS, FAMILY_ORDER, KIND_ORDER, LABELS, legend_of, save_figure  # noqa: E402
from resolvent.experiments.rundir import RunDir, finished  # noqa: E402
from resolvent.model import read_run_json  # noqa: E402
from resolvent.io import atomic_write_bytes, atomic_write_json  # noqa: E402

# evaluate: at the reset points, then at the dataset's states (``data_*``, where runs score them:
# on the MuJoCo families the true Q varies there and hardly at all at the reset points)
METRICS = {"evaluate": ("train_mse", "test_mse", "probe_mse", "train_r2", "test_r2", "probe_r2",
                        "data_test_mse", "data_test_r2", "data_probe_r2"),
           "optimize": ("return", "test_return")}
NAMES = {"train_mse": "train MSE", "test_mse": "test MSE", "probe_mse": "probe MSE", "train_r2": "train R^2",
         "test_r2": "test R^2", "probe_r2": "probe R^2", "data_test_mse": "test MSE, data states",
         "data_test_r2": "test R^2, data states", "data_probe_r2": "probe R^2, data states",
         "return": "return (original reward)", "test_return": "return (test rewards, mean)"}
SMALL_FILES = ("config.json", "metrics.jsonl", "results.json")


def iqm(scores: np.ndarray) -> np.ndarray:
    """IQM of (runs, tasks, ...) scores over runs and tasks, for every trailing index: rliable's
    ``aggregate_iqm`` (a 25% trimmed mean of all values) taken at each step at once. SciPy's
    ``trim_mean`` to the bit (the same partition and mean, NaN where a value is NaN), without its
    per-call checks: the bootstrap calls it (reps x cells x methods x metrics) times."""
    x = np.asarray(scores, np.float64).reshape(scores.shape[0] * scores.shape[1], -1)   # (values, steps)
    lo = int(0.25 * len(x))
    hi = len(x) - lo
    mean = np.mean(np.partition(x, (lo, hi - 1), 0)[lo:hi], axis=0)
    return np.where(np.isnan(x).any(0), np.nan, mean)


def key_seed(seed: int, key: str) -> int:
    """The bootstrap seed of one score's key: from ``seed`` and the key's name (a stable digest, not
    Python's salted ``hash``), so an interval does not depend on what else is reported beside it."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{key}".encode()).digest()[:4], "little")


def interval_estimates(scores: dict[str, np.ndarray], reps: int = 2000, seed: int = 0) -> dict[str, tuple]:
    """key -> (IQM, CI low, CI high), arrays over the trailing axis, for (runs, tasks, ...) scores:
    rliable's percentile intervals (95%) from a stratified bootstrap of ``reps`` samples, each key's
    own, seeded from ``seed`` and the key (``key_seed``)."""
    outer = np.random.get_state()   # rliable 1.2 draws its resamples from NumPy's global generator
    out = {}
    try:
        with warnings.catch_warnings():   # rliable hands arch its RandomState the way arch deprecates
            warnings.simplefilter("ignore", FutureWarning)
            for key, values in scores.items():
                own = key_seed(seed, key)
                np.random.seed(own)               # (its random_state does not reach them): seeded here
                point, ci = rly.get_interval_estimates({key: values}, iqm, reps=reps,
                                                       random_state=np.random.RandomState(own))
                out[key] = (point[key], ci[key][0], ci[key][1])
    finally:
        np.random.set_state(outer)      # then restored
    return out


@dataclass
class Cell:
    """A cell of a sweep and its finished runs."""

    name: str
    values: dict                  # axis values
    expected: int                 # runs (seeds) in the spec
    runs: list[Path]              # the finished ones
    configs: list[dict]           # their config.json
    results: list[dict]           # their results.json

    @property
    def methods(self) -> list[str]:
        """The methods its finished runs scored, in order: the configuration's, and where a run
        expands its operators, their expansions (``favor+k400``, ``fb+kauto``, ...)."""
        return list(dict.fromkeys(m for res in self.results for m in res["methods"]))

    def where(self, key: str) -> str:
        """The cell's family or dataset (from its runs' config)."""
        return self.configs[0].get(key) or "-"


def load_manifest(sweep_dir: str | Path) -> dict:
    """A sweep folder's ``sweep.json``, or one error naming the folder that has none."""
    path = Path(sweep_dir) / "sweep.json"
    if not path.is_file():
        raise FileNotFoundError(f"{sweep_dir} has no sweep.json: not a sweep folder (`resolvent sweep SPEC` makes one)")
    return read_run_json(path)


def read_sweep(sweep_dir: str | Path) -> tuple[str, list[Cell]]:
    """The task and cells of a sweep folder (its ``sweep.json``), with their finished runs."""
    root = Path(sweep_dir)
    manifest = load_manifest(root)
    cells: dict[str, Cell] = {}
    for entry in manifest["runs"]:
        cell = cells.setdefault(entry["cell"], Cell(entry["cell"], entry["values"], 0, [], [], []))
        cell.expected += 1
        run = RunDir(root / entry["path"])
        if not run.config_path.is_file():
            continue
        cfg, res = run.read_config(), run.read_results()     # {} before its first write: unfinished
        if finished(cfg, res):
            cell.runs.append(run.path)
            cell.configs.append(cfg)
            cell.results.append(res)
    return manifest["task"], list(cells.values())


def final_scores(task: str, entry: dict, metric: str) -> list[float]:
    """One method's final values of ``metric`` in results.json, one per network seed."""
    if task == "optimize" and metric == "test_return":
        tests = list(entry.get("test_returns", {}).values())
        return [float(v) for v in np.mean(tests, axis=0)] if tests else []
    return [float(v) for v in entry.get(metric, [])]


def row_value(task: str, row: dict, metric: str) -> float | None:
    if task == "optimize" and metric == "test_return":
        tests = list(row.get("test_returns", {}).values())
        return float(np.mean(tests)) if tests else None
    return row.get(metric)


def curve_scores(task: str, cell: Cell, method: str, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Steps (T,) logged by every finished run, and the values (runs x seeds, 1, T) along them."""
    series = []
    for path in cell.runs:
        by_seed = defaultdict(dict)
        for r in RunDir(path).read_metrics():
            v = row_value(task, r, metric) if r.get("method") == method else None
            if v is not None:
                by_seed[r["seed"]][r["step"]] = v
        series += by_seed.values()
    if not series:
        return None
    steps = sorted(set.intersection(*(set(s) for s in series)))
    return np.array(steps), np.array([[[s[t] for t in steps]] for s in series])


@dataclass
class Row:
    """One line of the table: a cell's method, its seeds and every metric's IQM [low, high]."""

    cell: Cell
    method: str
    seeds: int
    values: dict                  # metric -> (iqm, low, high)


def table(task: str, cells: list[Cell], reps: int = 2000, seed: int = 0) -> list[Row]:
    """IQM and 95% interval of every metric, per cell and method, over the finished seeds; each
    interval drawn from its cell, method and metric's own seed, the same in every report."""
    scores, counts = {}, {}
    for cell in cells:
        for method in cell.methods:
            for metric in METRICS[task]:
                vals = [v for res in cell.results if method in res["methods"]
                        for v in final_scores(task, res["methods"][method], metric)]
                if vals:
                    scores[f"{cell.name}|{method}|{metric}"] = np.array(vals)[:, None]        # (runs, 1 task)
                    counts[(cell.name, method)] = len(vals)
    est = interval_estimates(scores, reps, seed)
    rows = []
    for cell in cells:
        for method in cell.methods or ["-"]:
            values = {metric: tuple(float(x[0]) for x in est[key]) for metric in METRICS[task]
                      if (key := f"{cell.name}|{method}|{metric}") in est}
            rows.append(Row(cell, method, counts.get((cell.name, method), 0), values))
    return rows


def axes_of(cells: list[Cell]) -> list[str]:
    """The axis names of the sweep, in the order they first appear."""
    return list(dict.fromkeys(k for c in cells for k in c.values))


def fmt(v: float) -> str:
    return f"{v:.3g}"


def markdown(task: str, rows: list[Row], reps: int) -> str:
    axes = axes_of([r.cell for r in rows])
    metrics = [m for m in METRICS[task] if any(m in r.values for r in rows)]
    head = [*axes, "method", "seeds", *(NAMES[m] for m in metrics)]
    lines = [f"IQM over seeds [95% stratified-bootstrap interval, rliable, {reps} samples]; "
             f"seeds: finished / in the spec", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [str(r.cell.values.get(a, "")) for a in axes] + [r.method, f"{r.seeds}/{r.cell.expected}"]
        cells += [f"{fmt(r.values[m][0])} [{fmt(r.values[m][1])}, {fmt(r.values[m][2])}]" if m in r.values else "-"
                  for m in metrics]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def csv_text(task: str, rows: list[Row]) -> str:
    axes = axes_of([r.cell for r in rows])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*axes, "method", "seeds", "expected_seeds", "metric", "iqm", "ci_low", "ci_high"])
    for r in rows:
        for m, (mid, lo, hi) in r.values.items():
            w.writerow([*(r.cell.values.get(a, "") for a in axes), r.method, r.seeds, r.cell.expected, m,
                        repr(mid), repr(lo), repr(hi)])
    return buf.getvalue()


def groups(cells: list[Cell]) -> dict[str, list[Cell]]:
    """Cells by their axis values other than family and dataset (one figure each)."""
    out = defaultdict(list)
    for c in cells:
        if c.runs:
            rest = [str(v) for k, v in c.values.items() if k not in ("family", "dataset")]
            out["-".join(rest)].append(c)
    return out


def draw_band(ax, steps: np.ndarray, est: tuple, method: str, log: bool) -> None:
    """A method's IQM along training and its 95% interval as a band."""
    mid, lo, hi = est
    color = COLORS.get(method)
    ax.plot(steps, mid, label=LABELS.get(method, method), color=color, ls="--" if method == "fqe" else "-")
    ax.fill_between(steps, lo, hi, alpha=0.2, color=color)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("training steps")
    ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v else "0"))
    ax.grid(alpha=0.3)


def panel_curves(task: str, cells: list[Cell], metric: str, reps: int, seed: int) -> dict:
    """(cell index, method) -> (steps, (IQM, low, high) along them) for ``metric``."""
    steps, scores = {}, {}
    for i, cell in enumerate(cells):
        for method in cell.methods:
            got = curve_scores(task, cell, method, metric)
            if got is not None:
                steps[(i, method)], scores[f"{cell.name}|{method}|{metric}"] = got
    est = interval_estimates(scores, reps, seed)
    return {(i, m): (steps[(i, m)], est[f"{cells[i].name}|{m}|{metric}"]) for i, m in steps}


def order(cells: list[Cell]) -> tuple[list[str], list[str]]:
    fams = sorted({c.where("family") for c in cells}, key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER
                                                                       else 9, f))
    kinds = sorted({c.where("dataset") for c in cells}, key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER
                                                                         else 9, k))
    return fams, kinds


def figure_ope(cells: list[Cell], path: Path, title: str, reps: int, seed: int) -> Path:
    """Rows families, columns datasets x training/test rewards: MSE along training, IQM and its
    95% interval over seeds, one line per method."""
    fams, kinds = order(cells)
    fig, axes = plt.subplots(len(fams), 2 * len(kinds), squeeze=False,
                             figsize=(3.2 * 2 * len(kinds), 2.9 * len(fams) + 0.4))
    for ax in axes.flat:
        ax.set_axis_off()
    for c, metric in enumerate(("train_mse", "test_mse")):
        for (i, method), (steps, est) in panel_curves("evaluate", cells, metric, reps, seed).items():
            cell = cells[i]
            ax = axes[fams.index(cell.where("family")), 2 * kinds.index(cell.where("dataset")) + c]
            ax.set_axis_on()
            draw_band(ax, steps, est, method, log=True)
            ax.set_title(f"{cell.where('family')} / {cell.where('dataset')} / {metric.split('_')[0]} "
                         f"({len(cell.runs)} seeds)", fontsize=9)
    axes[0, 0].set_ylabel("MSE (IQM, 95% CI)")
    handles, labels = legend_of(axes.flat)
    ncol = max(1, min(len(labels), axes.shape[1]))           # one label per panel's width at most
    rows = -(-len(labels) // ncol)
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.02 + 0.2 * rows / fig.get_figheight(), 1, 0.97))   # 0.2 in per legend row
    return save_figure(fig, path)


def figure_opi(cells: list[Cell], path: Path, title: str, reps: int, seed: int) -> Path:
    """One panel per family and dataset: return under the original reward along training, IQM
    and its 95% interval over seeds; the TD3 target policy's return dashed."""
    fig, axes = plt.subplots(1, len(cells), figsize=(4.4 * len(cells), 3.8), squeeze=False)
    for (i, method), (steps, est) in panel_curves("optimize", cells, "return", reps, seed).items():
        draw_band(axes[0, i], steps, est, method, log=False)
    for ax, cell in zip(axes[0], cells):
        target = [r["target_return"] for r in cell.results if r.get("target_return") is not None]
        if target:
            ax.axhline(float(np.mean(target)), color="k", ls="--", lw=1, label="TD3 target policy")
        ax.set_title(f"{cell.where('family')} / {cell.where('dataset')} ({len(cell.runs)} seeds)", fontsize=9)
    axes[0, 0].set_ylabel("return, original reward (IQM, 95% CI)")
    axes[0, 0].legend(*legend_of(axes.flat), fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def copy_runs(sweep_dir: Path, cells: list[Cell], out: Path, manifest: bool = True) -> None:
    """``sweep.json`` (with ``manifest``: its runs of ``cells``) and every finished run's small
    files, in the same layout, into ``out``."""
    if manifest:
        m = load_manifest(sweep_dir)
        names = {c.name for c in cells}
        m["runs"] = [r for r in m["runs"] if r["cell"] in names]
        atomic_write_json(out / "sweep.json", m)
    for cell in cells:
        for run in cell.runs:
            dest = out / run.relative_to(sweep_dir)
            dest.mkdir(parents=True, exist_ok=True)
            for name in SMALL_FILES:
                shutil.copyfile(run / name, dest / name)


def joined_manifest(dirs: list[Path], out: Path, copy: bool, names: set[str]) -> dict:
    """One manifest for the runs of the cells ``names`` in several sweep folders, in ``out``: each
    run's path relative to ``out`` (or as it will be copied into it)."""
    manifests = [load_manifest(d) for d in dirs]
    runs = [{**r, "path": r["path"] if copy else os.path.relpath(d / r["path"], out)}
            for d, m in zip(dirs, manifests) for r in m["runs"] if r["cell"] in names]
    twice = sorted(p for p, k in Counter(r["path"] for r in runs).items() if k > 1)
    if twice:
        raise ValueError(f"the sweep folders hold runs at the same paths ({twice[:3]}): copied into one "
                         f"--out they would overwrite each other; report them without --copy-runs")
    return {"task": manifests[0]["task"], "joined": [os.path.relpath(d, out) for d in dirs], "runs": runs}


def read_sweeps(dirs: list[Path]) -> tuple[str, list[list[Cell]]]:
    """The task and every folder's cells, for one report: the folders hold runs of one task, no cell
    is in two of them, none already joins others."""
    if len(dirs) > 1:
        joined = [str(d) for d in dirs if "joined" in load_manifest(d)]
        if joined:
            raise ValueError(f"{', '.join(joined)} already joins several sweep folders: report those instead")
    read = [read_sweep(d) for d in dirs]
    tasks = sorted({task for task, _ in read})
    if len(tasks) > 1:
        raise ValueError(f"the sweep folders hold runs of different tasks ({', '.join(tasks)}): report them apart")
    twice = sorted(n for n, k in Counter(c.name for _, cells in read for c in cells).items() if k > 1)
    if twice:
        raise ValueError(f"cells {twice} are in more than one of the sweep folders: report them apart")
    return tasks[0], [cells for _, cells in read]


def pick_cells(read: list[list[Cell]], patterns: list[str]) -> list[list[Cell]]:
    """Every folder's cells whose names match one of ``patterns`` (shell-style: ``ant-dir-*``);
    one error naming a pattern that matches no cell, and the cells there are."""
    names = [c.name for cells in read for c in cells]
    unmatched = [p for p in patterns if not fnmatch.filter(names, p)]
    if unmatched:
        raise ValueError(f"no cell matches {', '.join(map(repr, unmatched))}; the cells: {', '.join(names)}")
    return [[c for c in cells if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)] for cells in read]


def report(sweep_dirs: str | Path | list, out: str | Path | None = None, reps: int = 2000, seed: int = 0,
           copy: bool = False, cells: list[str] | None = None) -> dict[str, Path]:
    """Write ``report.md``, ``report.csv`` and the figures of a sweep into ``out`` [the sweep
    folder]; with ``copy``, also every finished run's small files (so the report can be drawn
    again from ``out``). Several sweep folders (one grid run by several specs) are reported as one
    into an ``out`` of their own, with a ``sweep.json`` there that joins their manifests. With
    ``cells`` (shell-style patterns), only the cells whose names match, in the report and in the
    manifest written to ``out``. Returns what was written, by name."""
    dirs = [Path(d) for d in ([sweep_dirs] if isinstance(sweep_dirs, (str, Path)) else sweep_dirs)]
    if not dirs:
        raise ValueError("no sweep folder to report")
    if len(dirs) > 1 and (out is None or Path(out).resolve() in {d.resolve() for d in dirs}):
        raise ValueError("several sweep folders are reported into an --out folder of their own")
    out = Path(out) if out is not None else dirs[0]
    task, read = read_sweeps(dirs)
    if cells:
        read = pick_cells(read, list(cells))
    picked = [c for cs in read for c in cs]
    if not any(c.runs for c in picked):
        raise FileNotFoundError(f"{', '.join(map(str, dirs))}: no finished run yet")
    manifest = (joined_manifest(dirs, out, copy, {c.name for c in picked})     # its errors before any writing
                if len(dirs) > 1 else None)
    out.mkdir(parents=True, exist_ok=True)
    rows = table(task, picked, reps, seed)
    written = {"report.md": out / "report.md", "report.csv": out / "report.csv"}
    atomic_write_bytes(written["report.md"], markdown(task, rows, reps).encode())
    atomic_write_bytes(written["report.csv"], csv_text(task, rows).encode())
    name, draw = ("ope", figure_ope) if task == "evaluate" else ("opi", figure_opi)
    title = dirs[0].name if len(dirs) == 1 else out.name
    for key, members in groups(picked).items():
        fname = f"{name}-{key}.png" if key else f"{name}.png"
        written[fname] = draw(members, out / fname, f"{title} {key}".strip(), reps, seed)
    if manifest is not None:
        if copy:
            for d, cs in zip(dirs, read):
                copy_runs(d, cs, out, manifest=False)
        atomic_write_json(out / "sweep.json", manifest)
    elif copy and out.resolve() != dirs[0].resolve():
        copy_runs(dirs[0], picked, out)
    return written


__all__ = ["iqm", "interval_estimates", "read_sweep", "report"]
