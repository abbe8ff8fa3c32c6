"""A few true rollouts at the asked points: where a run's candidates disagree most, and at random.

auto (``experiments/trust.py``) keeps one candidate per run, from signals built from the same
transitions; on HalfCheetah-Vel replay's dataset states it is 2.2-3.0x the best candidate, the
error held by six upside-down states that none of auto's signals tells apart (results/README.md,
the targets' table; the action-support check marks them, ``evaluation/support.py``, and
``calibrate`` names them, ``Calibrated.support``). With a simulator that can be set to the asked
states, a few Monte-Carlo returns of pi there tell them apart. For C candidates' answers A
(C, R, n) for R rewards at n points:

    d_i = mean_r var_c (A[c, r, i] / sd_{c,j} A[c, r, j])       the candidates' disagreement at x_i
    E   = the m // 2 points of largest d_i                     (no truth needed to place them)
    L   = m - m // 2 points drawn at random among the others
    c*(r) = argmin_c  sum_{i in L} (A[c, r, i] - Q_r(x_i))^2    Q_r(x_i): pi rolled out from x_i
            (ties to the longest horizon, as auto's)
    answer: Q_r(x_i) at the rolled-out points E and L, A[c*(r), r, i] elsewhere

The points where the candidates disagree most are the rare states that decide the MSE (an
upside-down cheetah, a swing-up): they are answered by their own rollouts. The candidate for the
other points is chosen where they are typical, at random points: chosen at the points of most
disagreement it is tuned to the rare states and 1.4x the best candidate at the other points.

One rollout from each of the m points scores every reward. Measured on the answers and truths of
finished runs (results/accuracy/few-rollouts/): with m = 8 of 64 points, the set's MSE is within
1.1x of the best single candidate's in 90 of 93 (reward set, kind of points) rows on 9 runs,
geometric mean 0.67x, worst 1.14x; on the 5 runs with auto's pick, 57 of 57 against auto's 27
(worst 1.10x against 29x). Below 1x the gain is the simulator's: the rolled-out points are
answered by their truth.

``calibrate`` does it for a finished ``resolvent evaluate`` run (or ``resolvent.fit``'s): every
candidate of auto (the operators of ``AUTO_CANDIDATES`` the run trained, each with its
expansions) answers, and ``simulator_truth`` rolls pi out in the run's environment from the m
points, each state set with its environment's ``restore`` (``resolvent/restore.py``). Any other
source of true returns can be given as ``truth``. It is an online step of an offline method:
where no simulator can be set to a state, it cannot be used. The bank's answers (``METHOD+bK+kk``)
are not among the candidates: with them, on the saved answers of eight runs made with the bank, the
geometric mean moves from 0.65 to 0.63 of the best candidate's MSE but the worst row from 1.10 to
2.26, 84 rows of 90 within 1.1x against 90 (results/accuracy/few-rollouts/bank/). Placing the
exact half at the points the action-support check marks first measured worse or the same: on
HalfCheetah-Vel replay's 64 dataset states (6 marked) at m = 8 the set's MSE 0.77x -> 1.10x of the
best candidate (test rewards), 0.70x -> 0.73x (probes); at 512 (68 marked) and at m = 16 the same
(results/accuracy/support/calibrate-first.md): where the candidates disagree most is where the
error is, and it already holds most of the marked points that matter.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from resolvent.data.user import load_dataset, named_rewards
from resolvent.evaluation.ground_truth import horizon, roll_out
from resolvent.evaluation.points import restored
from resolvent.evaluation.support import SupportCheck
from resolvent.experiments.evaluate_config import AUTO_CANDIDATES, EvaluateConfig
from resolvent.experiments.rundir import RunDir
from resolvent.families import get_family
from resolvent.model import AUTO, OperatorModel, Reward, horizon_rank, load, load_support, run_policy, split_method
from resolvent.restore import restore_for, unknown_restore

Truth = Callable[[Mapping[str, Reward], np.ndarray, np.ndarray], np.ndarray]
#       (rewards, observations (m, ds), actions (m, da)) -> true Q (R, m)


@dataclass(frozen=True)
class Calibrated:
    """Each reward's answers: the truth at the rolled-out points, elsewhere the candidate closest to
    the truth at the random ones."""

    q: np.ndarray                  # (R, n) the truth at the rolled-out points, the chosen candidate's answer elsewhere
    chosen: tuple[str, ...]        # (R,) the candidate chosen for each reward
    candidates: tuple[str, ...]    # (C,) the candidates
    answers: np.ndarray            # (C, R, n) every candidate's answer (mean over network seeds)
    labelled: np.ndarray           # (m,) the points rolled out: the m // 2 where the candidates disagree
    #                                most, then m - m // 2 at random among the others
    truth: np.ndarray              # (R, m) the true Q there
    errors: np.ndarray             # (C, R) each candidate's mean squared error at the random ones
    support: SupportCheck | None   # the run's action-support check at the n points (None: a run made before it)


def disagreement(answers: np.ndarray) -> np.ndarray:
    """d_i (n,): the variance over candidates of the answers (C, R, n) at each point, in units of
    each reward's spread over candidates and points, averaged over the rewards. Unchanged when a
    reward is scaled; 0 where every candidate gives the same answer."""
    a = np.asarray(answers, np.float64)
    z = a / (a.std(axis=(0, 2), keepdims=True) + 1e-12)                        # (C, R, n)
    return z.var(0).mean(0)


def check_m(m: int, n: int) -> None:
    """One clear error for a number of points to roll out that is not 1..n."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= n:
        raise ValueError(f"m, the points rolled out, must be an integer in 1..{n} (the points asked), got {m!r}")


def labelled_points(answers: np.ndarray, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The points to roll out (indices): the m // 2 of largest ``disagreement`` (ties to the lower
    index), and m - m // 2 drawn at random (``seed``) among the others."""
    n = np.shape(answers)[-1]
    check_m(m, n)
    exact = np.argsort(-disagreement(answers), kind="stable")[:m // 2]
    others = np.setdiff1d(np.arange(n), exact)
    return np.sort(exact), np.sort(np.random.default_rng(seed).choice(others, m - m // 2, replace=False))


def choose(answers: np.ndarray, truth: np.ndarray, labelled: np.ndarray,
           prefer: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """c*(r) (R,) and every candidate's mean squared error (C, R) at the ``labelled`` points,
    against ``truth`` (R, m) there. Candidates tied with the best (to 1e-9 relative: expansions
    whose rollouts all ended before their horizon give one answer) go to the highest ``prefer``
    (C,), as auto's ties go to the longest horizon; then to the first."""
    errors = ((np.asarray(answers, np.float64)[:, :, labelled] - np.asarray(truth, np.float64)[None]) ** 2).mean(-1)
    if prefer is None:
        return np.argmin(errors, 0), errors
    tied = errors <= errors.min(0) * (1 + 1e-9) + 1e-12                                  # (C, R)
    rank = np.where(tied, np.asarray(prefer, np.float64)[:, None], -np.inf)              # (C, R)
    return np.argmax(rank, 0), errors


def combine(answers: np.ndarray, true_q: np.ndarray, exact: np.ndarray, at_random: np.ndarray,
            candidates: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """calibrate's answers from the candidates' answers (C, R, n) and the truth (R, m) at the
    rolled-out points, ``exact`` then ``at_random``: the truth there, elsewhere each reward's
    candidate closest to it at the random ones (``choose``, ties in auto's order: the longest
    horizon). Returns q (R, n), the candidate picked per reward (R,) and the errors (C, R)."""
    prefer = [horizon_rank(split_method(c)[1]) for c in candidates]
    picked, errors = choose(answers, true_q[:, len(exact):], at_random, prefer)
    q = np.asarray(answers, np.float64)[picked, np.arange(len(picked))]                 # (R, n)
    q[:, np.concatenate([exact, at_random])] = true_q
    return q, picked, errors


def run_candidates(run_dir: str | Path) -> tuple[str, ...]:
    """auto's candidates among a finished run's methods: every operator of ``AUTO_CANDIDATES``
    with each of its expansions (+kK, +kauto), in results.json's order."""
    results = RunDir(run_dir).read_results()
    if not results.get("complete"):
        raise ValueError(f"{run_dir} holds no finished run (its results.json is missing or not complete)")
    out = tuple(m for m in results["methods"] if split_method(m)[0] in AUTO_CANDIDATES)
    if len(out) < 2:
        raise ValueError(f"{run_dir} has {list(out)} of auto's candidates; calibration chooses among two or more")
    return out


def answer_all(run_dir: str | Path, candidates: Sequence[str], rewards: Mapping[str, Reward], observations,
               actions, policy: Callable | None = None) -> np.ndarray:
    """Every candidate's answer (C, R, n), mean over the network seeds. Each operator is loaded
    once, answering at each of its horizons from one rollout (a shorter one is its prefix)."""
    models: dict[str, OperatorModel] = {}
    for base in dict.fromkeys(split_method(c)[0] for c in candidates):
        horizons = [split_method(c)[1] for c in candidates if split_method(c)[0] == base]
        fixed = [k for k in horizons if k not in (0, AUTO)]   # loaded as an expansion: with the run's one-step model
        name = f"{base}+k{AUTO}" if AUTO in horizons else f"{base}+k{max(fixed)}" if fixed else base
        models[base] = load(run_dir, name)
        if policy is not None:
            models[base].target_policy = policy
    out = np.empty((len(candidates), len(rewards), len(observations)))
    for c, name in enumerate(candidates):
        base, k = split_method(name)
        for r, reward in enumerate(rewards.values()):
            out[c, r] = np.asarray(models[base].q_values(reward, observations, actions, seed=None, horizon=k)).mean(0)
    return out


def simulator_truth(run_dir: str | Path, policy: Callable | None = None) -> Truth:
    """True Q from the run's simulator: one environment per point, set to its state with the
    environment's ``restore``, its first action the point's, then pi (the run's target, or ``policy``)
    until gamma^t < the run's ``gt_tol``; every reward scored along the same rollouts."""
    cfg = EvaluateConfig.from_dict(RunDir(run_dir).read_config())
    spec = get_family(cfg.family) if cfg.data is None else load_dataset(cfg.data, cfg.env)[0]
    restore = restore_for(spec.env_id)
    if restore is None:
        raise ValueError(f"{unknown_restore(spec.env_id)}; pass truth=, a callable (rewards, observations, "
                         f"actions) -> true Q (R, m)")
    actor = policy if policy is not None else run_policy(run_dir)
    if actor is None:
        raise ValueError(f"{run_dir}'s target policy was given in Python; pass policy= (the same callable)")
    gamma, steps = cfg.fqe.gamma, horizon(cfg.fqe.gamma, cfg.gt_tol)

    def truth(rewards: Mapping[str, Reward], observations: np.ndarray, actions: np.ndarray) -> np.ndarray:
        envs = restored(spec, np.asarray(observations, np.float32), restore, steps, cfg.seed)
        gt = roll_out(envs, actor, np.asarray(actions, np.float32), steps, gamma, "calibration rollouts")
        out = []
        for name, reward in rewards.items():
            try:
                out.append(gt.q(reward))                                          # (m,)
            except Exception as e:  # noqa: BLE001 - the user's reward on the simulator's transitions
                raise ValueError(f"the reward {name!r} failed on the calibration rollouts: "
                                 f"{type(e).__name__}: {e}") from None
        return np.stack(out)                                                      # (R, m)
    return truth


def point_support(run_dir: str | Path, observations: np.ndarray, policy: Callable | None = None) -> SupportCheck | None:
    """The run's action-support check (``models/support.npz``, ``evaluation/support.py``) of pi's
    action (the run's target, or ``policy``) at the states ``observations`` (n, ds); None for a run
    made before the check, or one whose policy was given in Python and not passed. Reported, not
    used to place the rollouts: placing the unsupported points first measured worse than
    disagreement alone (results/accuracy/support/calibrate-first.md)."""
    support = load_support(Path(run_dir) / "models")
    actor = policy if policy is not None else run_policy(run_dir)
    if support is None or actor is None:
        return None
    obs = np.asarray(observations, np.float32)
    return support.check(obs, np.asarray(actor(obs)))


def calibrate(run_dir: str | Path, rewards: Mapping[str, Reward], observations, actions, m: int = 8,
              candidates: Sequence[str] | None = None, policy: Callable | None = None,
              truth: Truth | None = None, seed: int = 0) -> Calibrated:
    """The answer for each of ``rewards`` at (observations (n, ds), actions (n, da)): the truth
    at m rolled-out points, half where the candidates disagree most and half at random (``seed``),
    and elsewhere the candidate closest to the truth at the random half (see the module).
    ``candidates``: methods of the run (default: auto's, ``run_candidates``). ``policy``: the
    target policy, where the run was given a callable. ``truth``: true Q at given points
    (default: ``simulator_truth``, the run's environment)."""
    named = named_rewards(rewards, "rewards")
    if not named:
        raise ValueError("rewards must name at least one reward callable")
    obs, act = np.asarray(observations, np.float32), np.asarray(actions, np.float32)
    if obs.ndim != 2 or act.ndim != 2 or len(obs) != len(act):
        raise ValueError(f"observations (n, ds) and actions (n, da) must have one row per point, "
                         f"got {obs.shape} and {act.shape}")
    candidates = tuple(candidates) if candidates is not None else run_candidates(run_dir)
    check_m(m, len(obs))                                                          # before any answer
    answers = answer_all(run_dir, candidates, dict(named), obs, act, policy)     # (C, R, n)
    exact, at_random = labelled_points(answers, m, seed)
    lab = np.concatenate([exact, at_random])                                      # (m,)
    true_q = (truth or simulator_truth(run_dir, policy))(dict(named), obs[lab], act[lab])
    true_q = np.asarray(true_q, np.float64)
    if true_q.shape != (len(named), len(lab)) or not np.all(np.isfinite(true_q)):
        raise ValueError(f"the truth must be finite, one row per reward and one column per point rolled out "
                         f"{(len(named), len(lab))}, got shape {true_q.shape}")
    q, picked, errors = combine(answers, true_q, exact, at_random, candidates)
    return Calibrated(q, tuple(candidates[c] for c in picked), candidates, answers, lab, true_q, errors,
                      point_support(run_dir, obs, policy))
