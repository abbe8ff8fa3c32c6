"""Accuracy metrics of predicted against true Q-values (numpy; arrays (..., n) score over the last axis).

Per reward, over the evaluation points i = 1..n (q_i true, p_i predicted):

    MSE        = mean_i (p_i - q_i)^2
    R^2        = 1 - MSE / Var_i(q)                   (0: a constant at the truth's mean; 1: exact)
    rel. RMSE  = sqrt(MSE) / sqrt(mean_i q_i^2)       (error relative to the truth's size)
    Spearman   = Pearson correlation of the ranks of p and q (ties get their average rank)

Across the rewards k = 1..K of a set, on their *values* v_k = mean_i q_k(i) (predicted: mean_i
p_k(i)), the deep-OPE benchmark's trio (DOPE: Fu et al. 2021, arXiv 2103.16596; the definitions
of google-research/deep_ope's plots.ipynb): values normalised by the true best and worst,
v' = (v - min v) / (max v - min v), predictions the same way and clipped above at 2, then

    absolute error = mean_k |p'_k - v'_k|
    rank correlation = Spearman(p, v) across rewards
    regret@1 = (max_k v_k - v_{argmax_k p_k}) / (max v - min v)

(DOPE's ``(max v' - v'_{argmax p})/max v'`` with max v' = 1.)

With no truth at all, the data's own transitions (s_i, a_i, r_i, s'_i, d_i) still check an
answer: its Bellman residual relative to the reward's size,

    Bellman residual = sqrt(mean_i (p(s_i, a_i) - r_i - gamma (1 - d_i) p(s'_i, pi(s'_i)))^2) / sqrt(mean_i r_i^2),

0 for the true Q of a deterministic environment (a stochastic one adds the variance of
r + gamma V(s'), the same for every answer).

Against a reference answer o_i at the same points (per-reward FQE, say), the ratio of the MSEs,
MSE(p) / MSE(o), with a paired percentile bootstrap interval over the points: B draws of n
indices i*_1..i*_n with replacement, the same draw for both answers (and for every reward and
answer scored with it), each giving mean (p_i* - q_i*)^2 / mean (o_i* - q_i*)^2; the interval
holds the central ``level`` of those B ratios. With n = 64 points and errors held by a few of
them, a ratio of 2 can be as well 1 as 4 (``mse_ratio``).
"""
from __future__ import annotations

import numpy as np

EPS = 1e-12
BOOT_ELEMENTS = 2 ** 24   # the most squared errors one bootstrap chunk gathers (``mse_ratio``: 128 MiB)
TIE = 1e-9    # values this close (relative to a row's largest magnitude) are one value to ``ranks``


def mse(pred, truth) -> np.ndarray:
    """Mean squared error over the last axis."""
    pred, truth = np.asarray(pred, np.float64), np.asarray(truth, np.float64)
    return np.mean((pred - truth) ** 2, axis=-1)


def r2(pred, truth) -> np.ndarray:
    """1 - MSE / Var(truth) over the last axis."""
    truth = np.asarray(truth, np.float64)
    return 1.0 - mse(pred, truth) / np.maximum(np.var(truth, axis=-1), EPS)


def rel_rmse(pred, truth) -> np.ndarray:
    """RMSE / RMS of the truth over the last axis: 0.01 is 1% off the truth's size."""
    truth = np.asarray(truth, np.float64)
    return np.sqrt(mse(pred, truth)) / np.maximum(np.sqrt(np.mean(truth ** 2, axis=-1)), EPS)


def bellman_residual(q, reward, q_next, done, gamma: float, scale=None) -> np.ndarray:
    """The Bellman residual over the last axis of answers ``q`` at transitions (s, a) and
    ``q_next`` at (s', pi(s')), ``reward`` and ``done`` the transitions' (n,): RMS of
    q - r - gamma (1 - d) q' over the RMS of r (module docstring), or over ``scale`` (the
    reward's RMS over more transitions: a sparse reward may be 0 at every one of these)."""
    q, q_next, reward = (np.asarray(v, np.float64) for v in (q, q_next, reward))
    td = q - reward - gamma * (1.0 - np.asarray(done, np.float64)) * q_next
    size = np.sqrt(np.mean(reward ** 2, axis=-1)) if scale is None else np.asarray(scale, np.float64)
    return np.sqrt(np.mean(td ** 2, axis=-1)) / np.maximum(size, EPS)


def resamples(n: int, reps: int = 2000, seed: int = 0) -> np.ndarray:
    """``reps`` bootstrap draws of ``n`` point indices with replacement, (reps, n), from ``seed``."""
    return np.random.default_rng(seed).integers(0, n, size=(reps, n))


def mse_ratio(pred, ref, truth, draws: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MSE(pred) / MSE(ref) over the last axis, and its paired percentile bootstrap interval over
    the points (module docstring) from ``draws`` (``resamples``: (B, n)): (ratio, low, high), each
    of the leading shape. A reference exact at every point of a draw makes that draw's ratio inf
    (or NaN where ``pred`` is exact there too)."""
    truth = np.asarray(truth, np.float64)
    e_p = (np.asarray(pred, np.float64) - truth) ** 2                  # (..., n)
    e_o = (np.asarray(ref, np.float64) - truth) ** 2                   # (..., n)
    step = max(1, BOOT_ELEMENTS // max(e_p.size, 1))                  # draws at once: (..., step, n) bounded
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = e_p.mean(-1) / e_o.mean(-1)                            # (...,)
        boot = np.concatenate([e_p[..., d].mean(-1) / e_o[..., d].mean(-1)
                               for d in np.array_split(draws, -(-len(draws) // step))], -1)   # (..., B)
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(boot, [tail, 100.0 - tail], axis=-1)     # each (...,)
    return ratio, low, high


def ranks(x) -> np.ndarray:
    """Ranks 0..n-1 over the last axis, tied values sharing their average rank; values within
    ``TIE`` of the next larger one (relative to the row's largest magnitude) are ties: answers that
    are equal but for the order of a float sum (points in one closed cycle, an indicator held at
    every step) must not rank by their last bits."""
    x = np.asarray(x, np.float64)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for row, r in zip(flat, out):
        order = np.argsort(row, kind="stable")
        ahead = np.diff(row[order])                                     # (n - 1,) each sorted value to the next
        group = np.r_[0, np.cumsum(~(ahead <= TIE * np.nanmax(np.abs(row), initial=0.0)))]   # (n,) its tie group
        counts = np.bincount(group)
        first = np.r_[0, np.cumsum(counts)[:-1]]                       # rank of each group's first value
        r[order] = (first + (counts - 1) / 2.0)[group]
    return out.reshape(x.shape)


def spearman(pred, truth) -> np.ndarray:
    """Spearman rank correlation over the last axis (0 where either side is constant)."""
    a, b = ranks(pred), ranks(truth)
    a = a - a.mean(-1, keepdims=True)
    b = b - b.mean(-1, keepdims=True)
    den = np.sqrt((a ** 2).sum(-1) * (b ** 2).sum(-1))
    return np.where(den > EPS, (a * b).sum(-1) / np.maximum(den, EPS), 0.0)


def dope(pred_values, true_values) -> dict[str, np.ndarray]:
    """DOPE's value error, rank correlation and regret@1 across rewards (last axis, K >= 2):
    ``{"value_error", "value_rank", "regret"}``, each of the leading shape."""
    p, v = np.asarray(pred_values, np.float64), np.asarray(true_values, np.float64)
    lo, hi = v.min(-1, keepdims=True), v.max(-1, keepdims=True)
    span = np.maximum(hi - lo, EPS)
    vn, pn = (v - lo) / span, np.minimum((p - lo) / span, 2.0)
    best_by_pred = np.take_along_axis(v, np.argmax(p, axis=-1)[..., None], -1)
    return {"value_error": np.mean(np.abs(pn - vn), -1), "value_rank": spearman(p, v),
            "regret": ((hi - best_by_pred) / span)[..., 0]}


def score_points(pred, truth) -> dict[str, np.ndarray]:
    """Every metric of predictions ``pred`` (S, R, n) (seeds, rewards, points) against ``truth``
    (R, n): per seed, the point metrics averaged over rewards (``mse``, ``r2``, ``rel_rmse``,
    ``spearman``, each (S,)), the DOPE trio over the rewards' values (with R >= 2, each (S,)),
    and per reward ``r2_each``, ``rel_rmse_each`` (R, S)."""
    pred, truth = np.asarray(pred, np.float64), np.asarray(truth, np.float64)
    per = {"mse": mse(pred, truth), "r2": r2(pred, truth), "rel_rmse": rel_rmse(pred, truth),
           "spearman": spearman(pred, np.broadcast_to(truth, pred.shape))}          # each (S, R)
    out = {k: v.mean(1) for k, v in per.items()}
    if truth.shape[0] >= 2:
        out.update(dope(pred.mean(-1), np.broadcast_to(truth.mean(-1), pred.shape[:2])))
    out["r2_each"], out["rel_rmse_each"] = per["r2"].T, per["rel_rmse"].T
    return out
