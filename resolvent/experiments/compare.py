"""A run's answers against a reference answer at the same points, reward by reward, with intervals:
``resolvent compare RUN [REFERENCE_RUN]``.

For every answer of RUN (``favor``, ``favor+kauto``, ...), reward of a set (the probes by
default) and kind of points, the ratio of its MSE against the Monte-Carlo truth to the
reference's (per-reward FQE: a run of ``--methods fqe --oracle-rewards probe`` with the same
family, dataset and seed, so the same points and truth; or the run's own ``fqe``), with a 95%
paired bootstrap interval over the points (``resolvent.evaluation.metrics.mse_ratio``): one draw
of the points per kind, shared by every answer and reward, so two answers' intervals are read
against the same resamples. An answer is *within* a bound (1.5x) where its ratio is; *surely
within* where the interval's upper end is, *surely not* where its lower end is above it; the
rest the points cannot decide.

Written as ``compare.md`` (one row per answer and kind: each reward's ratio and interval, the
worst, the counts) and ``compare.png`` (the ratios and intervals of the answers shown, log scale,
one panel per kind of points), read from ``predictions.npz`` and ``results.json`` alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from resolvent.evaluation.metrics import mse, mse_ratio, resamples  # noqa: E402
from resolvent.experiments.plots import save_figure  # noqa: E402
from resolvent.io import atomic_write_bytes  # noqa: E402
from resolvent.model import CheckpointError, default_method, read_run_json  # noqa: E402

KINDS = ("dataset", "trajectory", "reset")
SET_NAMES = {"probe": "probes", "train": "train_rewards", "heldout": "heldout_rewards"}   # results.json's names


@dataclass(frozen=True)
class Ratio:
    """One answer's MSE over the reference's, for one reward at one kind of points."""

    method: str          # the run's answer (``favor+kauto``)
    rewards: str         # the reward set (``probe``)
    kind: str            # the kind of points (``dataset``, ``trajectory``, ``reset``)
    reward: str          # the reward's name (its index where results.json names none)
    mse: float           # the answer's MSE against the truth
    ref_mse: float       # the reference's
    low: float           # the interval's lower end
    high: float          # its upper end

    @property
    def ratio(self) -> float:
        """mse / ref_mse (inf where the reference is exact, NaN where both are)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.float64(self.mse) / self.ref_mse)


@dataclass(frozen=True)
class Comparison:
    """Every answer's ratios, and what they were measured against."""

    run: Path            # the run compared
    reference: str       # the reference answer, ``fqe`` of ``REFERENCE_RUN``
    within: float        # the bound counted (1.5)
    level: float         # the intervals' coverage (0.95)
    reps: int            # bootstrap draws
    points: dict         # kind -> its number of points
    default: str         # the run's default answer (``resolvent.default_method``)
    trusted: str | None  # the answer auto's rule keeps by the trust report (results.json's), where it made one
    rows: list           # [Ratio]


def predictions(run: Path) -> dict[str, np.ndarray]:
    """A run's ``predictions.npz`` as arrays, or one error saying what makes it."""
    path = run / "predictions.npz"
    if not path.is_file():
        raise ValueError(f"{run} has no predictions.npz: it is written when an evaluate run with ground truth "
                         f"finishes (`resolvent evaluate ... --out {run} --resume` finishes a killed one)")
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def reward_names(results: dict, rewards: str, count: int) -> list[str]:
    """The set's reward names from results.json, else their indices."""
    names = results.get(SET_NAMES.get(rewards, ""), [])
    return list(names) if len(names) == count else [f"{rewards} {i}" for i in range(count)]


def compare(run_dir: str | Path, reference_dir: str | Path | None = None, against: str = "fqe",
            rewards: str = "probe", methods: tuple[str, ...] = (), within: float = 1.5,
            reps: int = 2000, seed: int = 0, level: float = 0.95) -> Comparison:
    """Every answer of ``run_dir`` (or those named in ``methods``) against ``against`` of
    ``reference_dir`` (default: the run itself) on the ``rewards`` set, at every kind of points
    both runs scored (module docstring)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level {level}: an interval's coverage is between 0 and 1 (0.95)")
    if reps < 1 or within <= 0:
        raise ValueError(f"reps {reps}, within {within}: both must be positive")
    run = Path(run_dir)
    ref_run = run if reference_dir is None else Path(reference_dir)
    ours, theirs = predictions(run), predictions(ref_run)
    have = list(dict.fromkeys(k.split("|")[0] for k in ours if k.split("|")[1] == rewards))
    if not have:
        sets = sorted({k.split("|")[1] for k in ours})
        raise ValueError(f"{run} has no answers on the {rewards!r} rewards (its sets: {', '.join(sets)})")
    shown = [m for m in have if m != against or ref_run != run] if not methods else list(methods)
    unknown = [m for m in shown if m not in have]
    if unknown or not shown:
        raise ValueError(f"{run} has no answer {', '.join(unknown) or 'but the reference'} on the {rewards} rewards "
                         f"(it has: {', '.join(have)})")
    kinds = [k for k in KINDS if f"{against}|{rewards}|{k}|pred" in theirs
             and all(f"{m}|{rewards}|{k}|pred" in ours for m in shown)]
    if not kinds:
        refs = sorted({k.split("|")[0] for k in theirs if k.split("|")[1] == rewards})
        raise ValueError(f"{ref_run} has no {against!r} answer on the {rewards} rewards at the points {run} scored "
                         f"(its answers there: {', '.join(refs) or 'none'}); make one with `resolvent evaluate "
                         f"FAMILY --methods fqe --oracle-rewards {rewards}` on the same family, dataset and seed")
    results = read_run_json(run / "results.json")
    rows, points = [], {}
    for kind in kinds:
        truth, ref = theirs[f"{against}|{rewards}|{kind}|truth"], theirs[f"{against}|{rewards}|{kind}|pred"]   # (R, n)
        mine = ours[f"{shown[0]}|{rewards}|{kind}|truth"]
        if mine.shape != truth.shape or not np.allclose(mine, truth, rtol=1e-5, atol=1e-4):
            raise ValueError(f"{run} and {ref_run} hold different {kind} points or rewards (truth {mine.shape} "
                             f"against {truth.shape}): the reference must be made on the same family, dataset, "
                             f"seed and reward set")
        points[kind] = truth.shape[1]
        draws = resamples(truth.shape[1], reps, seed)                   # (B, n), shared by every answer
        names = reward_names(results, rewards, truth.shape[0])
        ref_mse = mse(ref, truth)                                        # (R,)
        for m in shown:
            pred = ours[f"{m}|{rewards}|{kind}|pred"]                    # (R, n)
            _, low, high = mse_ratio(pred, ref, truth, draws, level)
            rows += [Ratio(m, rewards, kind, name, float(e), float(o), float(lo), float(hi))
                     for name, e, o, lo, hi in zip(names, mse(pred, truth), ref_mse, low, high)]
    trusted = results.get("auto", results.get("trusted", {})).get("chosen")
    try:
        default = default_method(run)[0]
    except CheckpointError:          # answers without a results.json or config.json: none is the run's default
        default = shown[0]
    return Comparison(run, f"{against} of {ref_run}", within, level, reps, points, default, trusted, rows)


def counts(rows: list[Ratio], within: float) -> tuple[int, int, int]:
    """(within by the estimate, surely within, surely not) among ``rows``."""
    return (sum(r.ratio <= within for r in rows), sum(r.high <= within for r in rows),
            sum(r.low > within for r in rows))


def groups(c: Comparison) -> dict[tuple[str, str], list[Ratio]]:
    """(method, kind) -> its rows, in the comparison's order."""
    out: dict[tuple[str, str], list[Ratio]] = {}
    for r in c.rows:
        out.setdefault((r.method, r.kind), []).append(r)
    return out


def table(c: Comparison) -> str:
    """The comparison as markdown: per kind of points the reference's MSE, then one row per answer,
    each reward's ratio [interval], the worst, and the counts within the bound."""
    g = groups(c)
    names = list(dict.fromkeys(r.reward for r in c.rows))
    pct = f"{100 * c.level:g}%"
    lines = [f"Each answer's MSE over the reference's ({c.reference}), reward by reward, with its {pct} paired "
             f"bootstrap interval over the points ({c.reps} draws); within {c.within:g}x: by the ratio / surely "
             f"(the interval's upper end) / surely not (its lower end above). The run's default answer (in bold): "
             f"{c.default}" + (f"; auto's rule's pick by the trust report: {c.trusted}." if c.trusted else "."),
             "", "| answer | points | " + " | ".join(names)
             + f" | worst | within {c.within:g}x | surely | surely not |",
             "|---|---|" + "---|" * (len(names) + 4)]
    for kind in KINDS:
        if kind not in c.points:
            continue
        first = next(rows for (m, k), rows in g.items() if k == kind)
        lines.append(f"| reference MSE | {kind} ({c.points[kind]}) | "
                     + " | ".join(f"{r.ref_mse:.3g}" for r in first) + " | | | | |")
        for (m, k), rows in g.items():
            if k != kind:
                continue
            inside, sure, sure_not = counts(rows, c.within)
            label = f"**{m}**" if m == c.default else m
            cells = " | ".join(f"{r.ratio:.2f} [{r.low:.2f}, {r.high:.2f}]" for r in rows)
            lines.append(f"| {label} | {kind} | {cells}"
                         + f" | {max(r.ratio for r in rows):.2f} | {inside}/{len(rows)} | {sure}/{len(rows)} "
                           f"| {sure_not}/{len(rows)} |")
    return "\n".join(lines) + "\n"


def figure(c: Comparison, methods: list[str], path: Path) -> Path:
    """Each reward's ratio and interval for ``methods``, log scale, one panel per kind of points,
    the bound and 1x drawn."""
    g = groups(c)
    kinds = [k for k in KINDS if k in c.points]
    names = list(dict.fromkeys(r.reward for r in c.rows))
    height = 0.35 * len(names) + 1.6                                   # inches: a row per reward, the legend
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), height), sharey=True, squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for j, m in enumerate(methods):
            rows = g.get((m, kind), [])
            y = np.arange(len(rows)) + (j - (len(methods) - 1) / 2) * 0.8 / max(len(methods), 1)
            ratio = np.array([r.ratio for r in rows])
            err = np.array([[r.ratio - r.low for r in rows], [r.high - r.ratio for r in rows]])
            ax.errorbar(ratio, y, xerr=np.clip(err, 0, None), fmt="o", ms=3, capsize=2, label=m)
        ax.axvline(1.0, color="k", lw=0.6)
        ax.axvline(c.within, color="tab:red", lw=0.8, ls="--", label=f"{c.within:g}x")
        ax.set_xscale("log")
        ax.set_title(f"{kind} points ({c.points[kind]})", fontsize=9)
        ax.set_xlabel("MSE over the reference's", fontsize=8)
        ax.grid(alpha=0.3, which="both")
    axes[0, 0].set_yticks(np.arange(len(names)), names, fontsize=8)
    axes[0, 0].invert_yaxis()
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=len(methods) + 1, fontsize=8)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))                   # the legend's row below the panels
    return save_figure(fig, path, dpi=120)


def write(c: Comparison, out: str | Path, shown: list[str] | None = None) -> dict[str, Path]:
    """``compare.md`` and ``compare.png`` (the answers ``shown``, default the run's default answer)
    into the folder ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md = out / "compare.md"
    atomic_write_bytes(md, table(c).encode())
    have = {r.method for r in c.rows}
    shown = [m for m in (shown or [c.default]) if m in have] or [c.rows[0].method]
    return {"compare.md": md, "compare.png": figure(c, shown, out / "compare.png")}
