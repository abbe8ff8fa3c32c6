"""The trust report: how far to trust an answer on data with no ground truth, and ``method="auto"``.

Without an environment the only evidence at hand is agreement with a per-reward FQE oracle on
rewards the operators were not trained on. The run holds out ``trust_rewards`` generic rewards
(drawn from the generic prior under their own key, so never among the training draws) and adds
the user's given rewards (the dataset's own among them, trained on); one plain Q network per
such reward is trained on it alone (vmapped; the ``fqe`` method's code, same data, steps and
hyper-parameters, one seed), and every method's answer for those rewards is compared with it at
``trust_points`` dataset transitions: R^2 and relative RMSE (``trust_r2``, ``trust_rel_rmse``).
Where truth exists the same held-out rewards are also scored against it (``heldout_r2``, ...),
which is how the report itself is checked (results/README.md).

``method="auto"`` trains the candidates and keeps the one of best agreement: the lowest median
over held-out rewards of the relative RMSE against the oracle (a median, so that one reward
whose FQE answer is near 0 cannot decide alone). Relative RMSE, not R^2: on Pendulum it orders
the methods as the truth does where R^2 against the oracle does not (results/README.md).
"""
from __future__ import annotations

import dataclasses

import jax
import numpy as np

from resolvent.experiments.rundir import RunDir
from resolvent.experiments.runner import train_loop
from resolvent.keys import named_key
from resolvent.model import split_method
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


def mean_rel_rmse(entry: dict) -> float | None:
    """A method's mean over held-out rewards of its relative RMSE against the oracle (mean over
    seeds), from its results.json entry (None without the trust report). ``auto``'s criterion:
    chosen over the median, which picked 2-4x worse than the mean on Pendulum-Angle seed 1, a
    seed the rule was not designed on (results/README.md, "auto's rule")."""
    each = entry.get("trust_rel_rmse_each")
    return float(np.mean([np.mean(v) for v in each.values()])) if each else None


def choose_method(methods: dict, candidates: tuple[str, ...], tie: float = 0.0) -> dict:
    """``{"chosen", "why", "mean_trust_rel_rmse"}`` from results.json's ``methods`` entries: the
    candidate with the lowest mean relative RMSE against the oracle on held-out rewards; those
    within ``tie`` (a fraction) of that lowest count as tied, and of them the longest model-based
    expansion is kept (then the lowest score).

    The tie: where several candidates agree with the oracle about as well as the oracle agrees
    with the truth, the report cannot order them (on Pendulum-Angle the expansions are closer to
    the truth than the oracle itself), and the expansion, whose first steps come from the model
    and not from Bellman backups, is the better bet; where the model is poor (Ant-Dir, a noisy
    HalfCheetah) its expansions score outside the tie (results/README.md, "auto's rule")."""
    scores = {m: mean_rel_rmse(methods[m]) for m in candidates if m in methods}
    scores = {m: v for m, v in scores.items() if v is not None}
    if not scores:
        raise ValueError(f"method auto needs the trust report of its candidates {list(candidates)}")
    best = min(scores.values())
    tied = [m for m, v in scores.items() if v <= (1.0 + tie) * best]
    chosen = max(tied, key=lambda m: (split_method(m)[1], -scores[m]))
    ranked = ", ".join(f"{m} {v:.3f}" for m, v in sorted(scores.items(), key=lambda kv: kv[1]))
    n = len(next(iter(methods[chosen]["trust_rel_rmse_each"].values())))
    why = (f"closest to per-reward FQE on held-out rewards at dataset states: mean relative RMSE "
           f"{ranked} ({n} seed{'s' if n > 1 else ''})")
    if len(tied) > 1:
        why += f"; within {tie:.0%} of the best: {', '.join(tied)}, the longest expansion kept"
    return {"chosen": chosen, "why": why, "mean_trust_rel_rmse": scores}
