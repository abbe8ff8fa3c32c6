"""How many true rollouts auto would need: the candidate picked per reward by its error at m of
the asked points, where a few Monte-Carlo returns of pi are known, scored at the other points.

    python results/accuracy/few-rollouts/calibrate.py RUN [RUN ...] [--draws 500] [--out FILE]

The offline rule (``trust.choose_method``) picks one candidate per run from signals built from
the same transitions; on HalfCheetah-Vel replay's dataset states it misses by 2.2-3.0x
(results/README.md, the targets' table). The lead left there: a signal from outside the data at
the asked states. Here, for each reward set (train, test, probe, held-out) at each kind of points
(the data's states, the reset states, pi's trajectories), of n = 64 points with Monte-Carlo truth
Q(x_i) from ``predictions.npz``:

    labelled L: m points drawn at random,  rest: the other n - m
    per reward:  c*(r) = argmin_c  sum_{i in L} (G_c[r](x_i) - Q_r(x_i))^2
    pooled:      c*    = argmin_c  sum_r sum_{i in L} (G_c[r](x_i) - Q_r(x_i))^2

scored as the set's MSE at the rest over the best single candidate's there,

    ratio = mean_r mse_rest(c*(r), r) / min_c mean_r mse_rest(c, r)

(below 1 where picking per reward beats every candidate), its median and 90th percentile over
``--draws`` draws of L (``all scored``: at all n points, L included). L may also be placed
without truth, at the m points where the candidates disagree most,

    d_i = mean_r var_c (G_c[r](x_i) / sd_{c,j} G_c[r](x_j)),     L = the m largest d_i

one value, scored at all n points; and with auto's pick kept for every reward unless its error
at L is more than 2 times the best there. ``calibrate`` (the package's rule, ``split``): the
truth at all m rolled-out points, m // 2 of them where the candidates disagree most and the rest
at random, each reward's candidate chosen at the random ones answering elsewhere; median over
``--draws`` / 5 seeds, scored at all n points. ``auto`` is the offline pick (runs with the trust
report), scored at all n points the same way. The candidates are auto's: every method of the run whose operator is
one of ``AUTO_CANDIDATES``, its fixed horizons and kauto.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from resolvent.experiments.calibrate import choose, combine, disagreement, labelled_points
from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.trust import choose_method
from resolvent.model import split_method

SETS = ("train", "test", "probe", "heldout")
KINDS = ("dataset", "reset", "trajectory")
LABELLED = (1, 2, 4, 8, 16)     # m: true rollouts, per kind of points
POOLED = (4, 16)
WHOLE = (8,)                    # random m scored at all n points, as the disagreement picks are
DISAGREE = (4, 8, 16)              # m at the points where the candidates disagree most
SPLIT = (8, 16)                    # calibrate's rule: m // 2 where they disagree, the rest at random (seeded)


def set_errors(pred: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Squared errors (C, R, n) of C candidates' answers (C, R, n) for R rewards at n points."""
    return (pred - truth[None]) ** 2


def ratio(err: np.ndarray, lab: np.ndarray, scored: np.ndarray, pooled: bool) -> float:
    """The set's MSE at the ``scored`` points by the pick at the labelled points ``lab``, over
    the best single candidate's there."""
    r = err.shape[1]
    at_lab = err[:, :, lab].mean(-1)                                           # (C, R)
    at_scored = err[:, :, scored].mean(-1)                                     # (C, R)
    pick = np.full(r, np.argmin(at_lab.mean(1))) if pooled else np.argmin(at_lab, 0)   # (R,)
    return float(at_scored[pick, np.arange(r)].mean() / at_scored.mean(1).min())


def ratios(err: np.ndarray, m: int, draws: int, pooled: bool, rng: np.random.Generator,
           whole: bool = False) -> np.ndarray:
    """``ratio`` for ``draws`` random draws of m labelled points, scored at the others (or at
    all n with ``whole``): (draws,)."""
    n = err.shape[2]
    orders = [rng.permutation(n) for _ in range(draws)]
    return np.array([ratio(err, o[:m], np.arange(n) if whole else o[m:], pooled) for o in orders])


def split_ratio(pred: np.ndarray, truth: np.ndarray, best: float, m: int, seed: int, candidates: tuple) -> float:
    """``calibrate``'s answer (``combine``) scored at all n points over the best single
    candidate's MSE ``best``: the truth at the m rolled-out points (``labelled_points``), each
    reward's candidate chosen at the random half answering elsewhere."""
    exact, at_random = labelled_points(pred, m, seed)
    q = combine(pred, truth[:, np.concatenate([exact, at_random])], exact, at_random, candidates)[0]   # (R, n)
    return float(((q - truth) ** 2).mean() / best)


def finished(run: Path) -> dict:
    """The run's results.json; a run that is not finished, or has no predictions.npz, is named."""
    results = RunDir(run).read_results()
    if not results.get("complete") or not (run / "predictions.npz").is_file():
        raise SystemExit(f"{run} is not a finished run with predictions.npz (resolvent evaluate writes both)")
    return results


def study(run: Path, draws: int, seed: int) -> list[dict]:
    """One row per (kind of points, reward set) of the run: auto's ratio and each m's."""
    methods = finished(run)["methods"]
    preds = np.load(run / "predictions.npz")
    candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
    try:
        auto = choose_method(methods, candidates, RunDir(run).read_config().get("auto_tie", 1.5))["chosen"]
    except ValueError:                                      # a run without the trust report
        auto = None
    rng = np.random.default_rng(seed)
    rows = []
    for kind in KINDS:
        for name in SETS:
            keys = [f"{c}|{name}|{kind}|pred" for c in candidates]
            if not all(k in preds.files for k in keys):
                continue
            truth = np.asarray(preds[f"{candidates[0]}|{name}|{kind}|truth"], np.float64)   # (R, n)
            pred = np.stack([np.asarray(preds[k], np.float64) for k in keys])                 # (C, R, n)
            err = set_errors(pred, truth)                                                      # (C, R, n)
            best = err.mean((1, 2))
            row = {"run": str(run), "kind": kind, "set": name, "rewards": err.shape[1],
                   "best": candidates[int(np.argmin(best))],
                   "auto": None if auto is None else float(best[candidates.index(auto)] / best.min())}
            for m in LABELLED:
                row[f"m{m}"] = ratios(err, m, draws, False, rng)
            for m in POOLED:
                row[f"pooled{m}"] = ratios(err, m, draws, True, rng)
            for m in WHOLE:
                row[f"whole{m}"] = ratios(err, m, draws, False, rng, whole=True)
            order = np.argsort(-disagreement(pred), kind="stable")                             # (n,) most first
            for m in DISAGREE:
                row[f"disagree{m}"] = np.array([ratio(err, order[:m], np.arange(err.shape[2]), False)])
            row["prior8"] = row["autotruth8"] = np.array([np.nan])
            if auto is not None:
                a, top = candidates.index(auto), order[:8]
                picked, at_top = choose(pred, truth[:, top], top)                              # (R,), (C, R)
                picked = np.where(at_top[a] <= 2 * at_top.min(0), a, picked)   # auto kept unless 2x off there
                row["prior8"] = np.array([err[picked, np.arange(len(picked))].mean() / best.min()])
                kept = err[a].copy()                                                           # (R, n)
                kept[:, top] = 0.0                                  # auto, with the truth at the 8 points
                row["autotruth8"] = np.array([kept.mean() / best.min()])
            for m in SPLIT:
                row[f"split{m}"] = np.array([split_ratio(pred, truth, best.min(), m, d, candidates)
                                             for d in range(draws // 5)])
            rows.append(row)
    return rows


def summary(values: np.ndarray) -> str:
    """``median [90th percentile]`` of a ratio over the draws (the value alone for one)."""
    if len(values) == 1:
        return "-" if np.isnan(values[0]) else f"{values[0]:.2f}"
    return f"{np.median(values):.2f} [{np.quantile(values, 0.9):.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--draws", type=int, default=500, help="random draws of the labelled points per m")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write the tables to this Markdown file")
    ap.add_argument("--plot", type=Path, default=None, help="also draw every row's ratios to this image")
    args = ap.parse_args()
    columns = ([f"m{m}" for m in LABELLED] + [f"pooled{m}" for m in POOLED] + [f"whole{m}" for m in WHOLE]
               + [f"disagree{m}" for m in DISAGREE] + ["prior8", "autotruth8"] + [f"split{m}" for m in SPLIT])
    titles = {**{f"m{m}": f"m = {m}" for m in LABELLED}, **{f"pooled{m}": f"m = {m}, pooled" for m in POOLED},
              **{f"whole{m}": f"m = {m}, all scored" for m in WHOLE},
              **{f"disagree{m}": f"m = {m} where they disagree, all scored" for m in DISAGREE},
              "prior8": "m = 8 where they disagree, auto kept unless 2x off there",
              "autotruth8": "auto, with the truth at the 8 where they disagree",
              **{f"split{m}": f"calibrate, m = {m}: truth at all {m}, chosen at the {m - m // 2} random"
                 for m in SPLIT}}
    lines, every, with_auto = [], {c: [] for c in ["auto", *columns]}, []
    for run in args.runs:
        results = finished(run)
        lines += [f"\n### `{run}` ({results['family']}, {results['dataset']})\n",
                  "| points | rewards | best candidate | auto | " + " | ".join(titles[c] for c in columns) + " |",
                  "|---|---|---|---|" + "---|" * len(columns)]
        for row in study(run, args.draws, args.seed):
            for c in columns:
                every[c].append(np.median(row[c]))
            with_auto.append(row["auto"] is not None)
            every["auto"].append(np.nan if row["auto"] is None else row["auto"])
            auto = "-" if row["auto"] is None else f"{row['auto']:.2f}"
            lines.append(f"| {row['kind']} | {row['set']} ({row['rewards']}) | {row['best']} | {auto} | "
                         + " | ".join(summary(row[c]) for c in columns) + " |")
    lines += ["\nThe medians' geometric mean, worst, and how many are within 1.1x, over every row above and over "
              "the rows with auto's pick:\n",
              "| rows | " + " | ".join(["auto", *(titles[c] for c in columns)]) + " |",
              "|---|" + "---|" * (len(columns) + 1)]
    for name, rows in (("every", np.ones(len(with_auto), bool)), ("with auto", np.array(with_auto))):
        for what, fn in (("geometric mean", lambda v: f"{np.exp(np.mean(np.log(v))):.2f}"),
                         ("worst", lambda v: f"{np.max(v):.2f}"),
                         ("within 1.1x", lambda v: f"{np.sum(v <= 1.1)}/{len(v)}")):
            vals = [np.asarray(every[c])[rows] for c in ["auto", *columns]]
            cells = [fn(v) if len(v) and np.isfinite(v).all() else "-" for v in vals]
            lines.append(f"| {name}, {what} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text.lstrip() + "\n")
    if args.plot is not None:
        plot({c: np.asarray(v) for c, v in every.items()}, args.plot)


def plot(every: dict[str, np.ndarray], path: Path) -> None:
    """Two panels of every (run, kind, reward set) row's ratio to the best single candidate:
    calibrate's rule (8 rollouts) and the choice where the candidates disagree, against a
    typical random draw of 8 (its median, all scored) and against auto's pick where the run has
    one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    has_auto = np.isfinite(every["auto"])
    series = [(every["split8"], "calibrate: truth at the 8, choice at the random 4", "C3"),
              (every["disagree8"], "choice where the candidates disagree", "C0")]
    panels = ((axes[0], every["whole8"], "choice at 8 random points (median over draws)",
               np.ones(len(has_auto), bool)),
              (axes[1], every["auto"], "auto's pick, no rollouts", has_auto))
    ticks = [0.03, 0.1, 0.3, 1, 3, 10, 30]
    for ax, x, xlabel, rows in panels:
        for y, label, colour in series:
            ax.scatter(x[rows], y[rows], s=18, alpha=0.7, color=colour, label=label)
        lo = min(0.5, float(min(x[rows].min(), *(y[rows].min() for y, _, _ in series))))
        hi = max(3.0, float(max(x[rows].max(), *(y[rows].max() for y, _, _ in series))))
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8)
        ax.axhline(1.1, color="grey", lw=0.6, ls=":")
        ax.set(xscale="log", yscale="log", xlabel=f"{xlabel}: MSE / best candidate's",
               ylabel="with 8 rollouts: MSE / best candidate's",
               title=f"{rows.sum()} rows (kind of points x reward set)")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(matplotlib.ticker.FixedLocator(ticks))
            axis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            axis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set(xlim=(lo / 1.2, hi * 1.2), ylim=(lo / 1.2, hi * 1.2))
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
