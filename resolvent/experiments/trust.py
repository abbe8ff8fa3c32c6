"""The trust report: how far to trust an answer on data with no ground truth, and ``method="auto"``.

Without an environment the only evidence at hand is agreement with a per-reward FQE oracle on
rewards the operators were not trained on. The run holds out ``trust_rewards`` generic rewards
(drawn from the generic prior under their own key, so never among the training draws) and adds
the user's given rewards (the dataset's own among them, trained on; on a family, its first
``trust_family_rewards`` training rewards, none by default); one plain Q network per
such reward is trained on it alone (vmapped; the ``fqe`` method's code, same data, steps and
hyper-parameters, one seed), and every method's answer for those rewards is compared with it at
``trust_points`` dataset transitions: R^2 and relative RMSE (``trust_r2``, ``trust_rel_rmse``).
Where truth exists the same held-out rewards are also scored against it (``heldout_r2``, ...),
which is how the report itself is checked (results/README.md). Needing no oracle at all, each
answer's Bellman residual on the held-out rewards at the same transitions (s, a, r, s') checks it
against the data itself (``trust_bellman``, ``evaluation/metrics.py``); the oracle's own is in
results.json's ``trust_oracle``.

``method="auto"`` trains the candidates and keeps one that is best, or within a band of the best,
on agreement (relative RMSE against the oracle, not R^2: on Pendulum it orders the methods as
the truth does where R^2 against the oracle does not) or on the Bellman residual
(``choose_method``); its operator's bank answer may take its place (``with_bank``), and an
expansion kept is averaged with the same expansion of the operators tied with it (``with_partners``).
"""
from __future__ import annotations

import dataclasses

import jax
import numpy as np

from resolvent.experiments.rundir import RunDir
from resolvent.experiments.runner import train_loop
from resolvent.keys import named_key
from resolvent.model import AUTO, MEAN, horizon_rank, split_bank, split_method
from resolvent.rewards import PriorConfig, PriorStats, generic_rewards

ORACLE = "trust-oracle"   # its checkpoint's name in the run directory


def heldout_rewards(prior: PriorConfig, key: jax.Array, stats: PriorStats, z_raw: np.ndarray, count: int,
                    given: list) -> list:
    """``count`` generic rewards drawn with ``key`` (named ``heldout-i``), then the ``given``
    named rewards (named ``given:NAME``): the trust report's rewards."""
    generic = dataclasses.replace(prior, kind="generic")
    drawn = generic_rewards(generic, key, stats, z_raw, count)
    return [(f"heldout-{i}", r) for i, r in enumerate(drawn)] + [(f"given:{k}", r) for k, r in given]


def trust_indices(n: int, count: int, seed: int) -> np.ndarray:
    """The dataset transitions (sorted, distinct) where the trust report compares answers."""
    return np.sort(np.random.default_rng([seed, 17]).choice(n, min(n, count), replace=False))


def train_oracle(run: RunDir, method, seed: int, steps: int, every: int, checkpoint_every: int):
    """Train the per-reward FQE ``method`` (one seed) to ``steps``, checkpointed in ``run`` as
    ``trust-oracle`` (a resumed run continues it); returns its parameters."""
    init_keys = named_key(seed, ORACLE, "init")[None]                                  # (1, 2)
    keys = named_key(seed, ORACLE, "train")[None]                                      # (1, 2)
    resume = run.checkpoint_path(ORACLE).is_file()

    def log(state, step, loss, seconds):
        return {"bellman residual": "-" if loss is None else f"{np.mean(loss):.3g}"}

    state, _, _ = train_loop(run, ORACLE, method.init(init_keys, method.data), keys, steps, every,
                             checkpoint_every, resume, lambda st, k: method.train(st, method.data, k), log)
    return state.params


def mean_over_heldout(entry: dict, key: str) -> float | None:
    """A method's mean over held-out rewards of ``key`` (``trust_rel_rmse_each``,
    ``trust_bellman_each``; mean over seeds first) from its results.json entry, None where the
    entry lacks it. A mean, not a median: the median picked 2-4x worse than the mean on
    Pendulum-Angle seed 1, a seed the rule was not designed on (results/README.md, "auto's rule")."""
    each = entry.get(key)
    return float(np.mean([np.mean(v) for v in each.values()])) if each else None


def band_edge(scores: dict[str, float], tie: float) -> float:
    """The edge of auto's band on one signal: ``tie`` (a fraction) over the best of ``scores``."""
    return (1.0 + tie) * min(scores.values())


def tie_bands(agreement: dict[str, float], bellman: dict[str, float],
              tie: float) -> tuple[dict[str, list[str]], bool]:
    """auto's bands: per signal (``agreement``, and ``consistency`` where every candidate has a
    Bellman residual), the candidates within ``tie`` (a fraction) of the best. A residual band
    that holds every candidate tells none apart and is left out; the bool says it was."""
    bands = {"agreement": agreement, **({"consistency": bellman} if len(bellman) == len(agreement) else {})}
    kept = {name: [m for m, v in sc.items() if v <= band_edge(sc, tie)] for name, sc in bands.items()}
    blind = len(agreement) > 1 and len(kept.get("consistency", ())) == len(agreement)   # tells none apart
    if blind:
        del kept["consistency"]
    return kept, blind


def choose_method(methods: dict, candidates: tuple[str, ...], tie: float = 0.0) -> dict:
    """``{"chosen", "why", "mean_trust_rel_rmse", "mean_trust_bellman"}`` from results.json's
    ``methods`` entries. Two signals, each blind where the other sees:

    - agreement: the mean relative RMSE against per-reward FQE on the held-out rewards. It cannot
      rank candidates closer to the truth than FQE itself (Pendulum-Angle medium: the k = 400
      expansions are 30x closer to the truth than FQE and score as FQE's own error);
    - consistency: the mean Bellman residual on the trust report's transitions, no reference
      needed. It is blind to errors smooth along the transitions and sees the one-step model's
      error through the value's slope (Reacher: it prefers k = 150 to the better k = 400).

    Kept: the candidates within ``tie`` (a fraction) of the best on either signal (with tie 0,
    the best of each); of them the longest model-based expansion, then the best agreement. The
    expansion, whose first steps come from the model and not from Bellman backups, is the better
    bet where a signal cannot tell it apart; where the model is poor its expansions fall outside
    both bands (results/README.md, "auto's rule"). A kept ``METHOD+kauto`` (each reward's horizon
    chosen by the members' spread against the operator's error) takes the longest fixed
    expansion's place where its agreement is the better, the best such: on the committed runs with
    kauto candidates and truth it takes HalfCheetah-Vel expert from favor+k60 (29-39x the best
    candidate's MSE at the dataset states' probes) to favor+kauto (1.31-1.39x) and Ant-Dir expert
    from 1.58x to 1.23-1.25x, HalfCheetah-Vel replay the same at its worst (2.97x) and 1.46-1.48x
    -> 1.73-1.74x in geometric mean on two runs of four; every other run keeps its pick
    (results/accuracy/trust-signals/kauto_rule.md). The residual's band counts only where it tells
    candidates apart: one that holds every candidate (Ant-Dir expert, where a long rollout's
    per-point scatter makes every residual large) is left out, and agreement decides (on the 13
    runs scored, the worst pick 1.42x -> 1.29x the best candidate's error; results/README.md, "auto
    and kauto"). A run made before the Bellman residual is chosen by agreement alone."""
    scores = {m: mean_over_heldout(methods[m], "trust_rel_rmse_each") for m in candidates if m in methods}
    scores = {m: v for m, v in scores.items() if v is not None}
    if not scores:
        raise ValueError(f"method auto needs the trust report of its candidates {list(candidates)}")
    bellman = {m: mean_over_heldout(methods[m], "trust_bellman_each") for m in scores}
    bellman = {m: v for m, v in bellman.items() if v is not None}
    kept, blind = tie_bands(scores, bellman, tie)
    residual = blind or "consistency" in kept                  # every candidate has its Bellman residual
    tied = sorted({m for ms in kept.values() for m in ms})
    longest = max(tied, key=lambda m: (horizon_rank(split_method(m)[1]), -scores[m]))
    closer = [m for m in tied if split_method(m)[1] == AUTO and scores[m] < scores[longest]]
    chosen = min(closer, key=lambda m: scores[m]) if closer else longest       # kauto where it agrees better
    n = len(next(iter(methods[chosen]["trust_rel_rmse_each"].values())))

    def rank(sc: dict) -> str:
        return ", ".join(f"{m} {v:.3f}" for m, v in sorted(sc.items(), key=lambda kv: kv[1]))

    why = (f"agreement with per-reward FQE on held-out rewards at dataset states (mean relative RMSE: "
           f"{rank(scores)})")
    if residual:
        why += f" and Bellman residual on the data's transitions ({rank(bellman)})"
    why += f", {n} seed{'s' if n > 1 else ''}"
    band = f"within {tie:.0%} of the best" if tie else "the best"
    why += "; " + "; ".join(f"{band} on {name}: {', '.join(ms)}" for name, ms in kept.items())
    if blind:
        why += f"; {band} on consistency: every candidate, so it tells none apart and is left out"
    if closer:
        why += (f"; of these {chosen}, its horizon chosen per reward, closer to FQE than the longest fixed "
                f"expansion {longest} ({scores[chosen]:.3f} against {scores[longest]:.3f})")
    elif len(tied) > 1:
        why += "; of these the longest expansion kept"
    return {"chosen": chosen, "why": why, "mean_trust_rel_rmse": scores,
            **({"mean_trust_bellman": bellman} if residual else {})}


def with_bank(methods: dict, choice: dict, tie: float = 0.0) -> dict:
    """auto's ``choice`` (``choose_method``'s, with its band ``tie``), its pick replaced by its own
    operator's answer with the data's bank (``METHOD+bK+kk``, ``algorithms/bank.py``) where that
    answer is at least as consistent with the data, its Bellman residual on the held-out rewards no
    larger than the pick's, and in auto's agreement band (mean relative RMSE against per-reward FQE
    within ``tie`` of the candidates' best); of such answers the lowest residual, ties to the fewest
    model steps. Both, on six runs (results/accuracy/bank/README.md, "auto with the bank"): the
    residual sees where the bank's neighbours disagree (Pendulum-Angle expert, reach 0.1: 0.138
    against G_400's 0.076, the bank 3-7x G_400's test MSE), the agreement band where the one-step
    model drifts (Ant-Dir expert, fb alone: the bank's residual 7.31 against fb+k60's 8.31, its
    agreement 0.249 outside the band's 0.17, its test MSE 1.3-1.5x). On the noisy HalfCheetah
    fb+k400 becomes fb+b400+k10 (the own reward's MSE 1.9x / 1.6x / 1.1x lower at the reset,
    trajectory and dataset points), on Pendulum with ``bank.reach`` 0 favor+k400 becomes
    favor+b400+k150 (better at every kind of point); on HalfCheetah-Vel expert, where the bank is
    better still, its agreement (0.67) is outside the band and favor+k60 stays. On a seventh run,
    Pendulum-Angle replay, favor+k400 becomes favor+b400+k60 (residual 0.213 against 0.297), better
    at the reset points and 7.5x the test MSE along pi's trajectories, where points reach the bank
    within a few steps: the residual does not see those neighbours' error there; on an eighth,
    Pendulum-Angle medium, fb+k400 becomes fb+b400+k30, 21x better along the trajectories and
    2.3x / 39x worse at the reset and dataset points. So a third condition, where the run has
    them: the bank answer's RMS difference from its operator's G_K at the trust points
    (``trust_gap_each``) no larger than G_K's spread among its ensemble members there
    (``trust_spread_each``): a bank that departs from G_K by more than the one-step model's own
    uncertainty explains adds its interpolation error. Measured on five finished runs' answers
    (results/accuracy/bank/spread/): spread / gap 0.31-0.52 on Pendulum expert, replay and medium
    (the bank worse at most points), 1.63 on the noisy HalfCheetah (better); end to end on Pendulum
    replay favor+k400 now stays (favor+b400+k60's departure 0.213 against G_400's spread 0.124),
    on medium fb+k400 (0.222 against 0.091), and where the bank is the better answer it is still
    kept: Pendulum expert with reach 0 (favor+b400+k150, 0.040 against 0.076), the noisy
    HalfCheetah (fb+b400+k10, 1.57 against 2.59).
    A run without a bank, or without the residual, keeps its pick; one without the spread (a
    single one-step model, or a run made before) skips the third condition."""
    chosen = choice["chosen"]
    mine = mean_over_heldout(methods[chosen], "trust_bellman_each")
    if mine is None:
        return choice
    operator, band = split_method(chosen)[0], band_edge(choice["mean_trust_rel_rmse"], tie)
    banked = {}                                  # name -> (residual, model steps, departure from G_K, G_K's spread)
    for m, entry in methods.items():
        base, k = split_method(m)
        name, bank = split_bank(base)
        if not bank or k == AUTO or name != operator:               # not this operator's bank answer
            continue
        bellman = mean_over_heldout(entry, "trust_bellman_each")
        agreement = mean_over_heldout(entry, "trust_rel_rmse_each")
        gap = mean_over_heldout(entry, "trust_gap_each")
        spread = mean_over_heldout(methods.get(f"{name}+k{bank}", {}), "trust_spread_each")
        within = gap is None or spread is None or gap <= spread
        if bellman is not None and agreement is not None and bellman <= mine and agreement <= band and within:
            banked[m] = (bellman, k, gap, spread)
    if not banked:
        return choice
    best = min(banked, key=lambda m: banked[m][:2])
    why = (f"; {best}, its operator with the data's bank, within the band on agreement and as consistent with "
           f"the data (Bellman residual {banked[best][0]:.3f} against {mine:.3f}): kept in its place, for answers "
           f"at new points in at most {banked[best][1]} model steps")
    gap, spread = banked[best][2:]
    if gap is not None and spread is not None:
        g_k = f"{operator}+k{split_bank(split_method(best)[0])[1]}"                  # the G_K the bank stands in for
        why += f" (its departure from {g_k} {gap:.3f}, within that one's spread over one-step members {spread:.3f})"
    return {**choice, "chosen": best, "why": choice["why"] + why, "replaced": chosen}


def with_partners(choice: dict, tie: float = 0.0) -> dict:
    """auto's ``choice`` (``choose_method``'s, its band ``tie``), its pick averaged with its tied
    partners: the same expansion (``METHOD+kK``, ``METHOD+kauto``) of every other candidate
    operator whose mean held-out agreement (relative RMSE against per-reward FQE) is at most
    (1 + ``tie``) x the pick's. The result is named by its answers (``MEAN``, the pick first, e.g.
    ``fb+k400~favor+k400``; ``model.MeanModel``), the pick kept as ``alone`` and the partners as
    ``partners``. Where operators tie on every trust signal, the rule keeps one of them by the
    last digit (Pendulum-Angle medium: fb+k400 0.1265 against favor+k400's 0.1266), yet their
    errors differ; their mean reads no ground truth either. On the 12 committed runs with answers
    and the trust report (results/accuracy/intervals/pair-average.md), each reward's MSE over the
    best single candidate's: geometric mean 1.050x -> 1.026x, the worst 1.404x -> 1.145x
    (Pendulum-Angle medium), better than every single candidate on both HalfCheetah-Vel expert
    runs (0.956x, 0.982x), Ant-Dir expert 1.116x -> 1.029x; Reacher 1.000x -> 1.145x the cost.
    A bank answer (``with_bank``'s replacement) and an operator alone stand as they are: the rule
    was measured on expansions."""
    chosen, scores = choice["chosen"], choice["mean_trust_rel_rmse"]
    base, k = split_method(chosen)
    if "replaced" in choice or not k or split_bank(base)[1]:
        return choice
    partners = [m for m, v in scores.items() if v <= (1.0 + tie) * scores[chosen] and m != chosen
                and split_method(m)[1] == k and split_method(m)[0] != base]
    if not partners:
        return choice
    why = (f"; averaged with {', '.join(partners)}, the same expansion of the other operators within (1 + {tie:g}) x "
           f"its agreement ({', '.join(f'{m} {scores[m]:.3f}' for m in partners)} against {scores[chosen]:.3f}): "
           f"tied operators' errors differ, and their mean is the better bet")
    return {**choice, "chosen": MEAN.join((chosen, *partners)), "why": choice["why"] + why, "alone": chosen,
            "partners": partners}
