"""A one-step model of the data: what a transition stores besides (s, a), predicted from (s, a).

Rewards may read the step's next quantities: ``next_obs``, the environment's ``reward``, the
info entries (HalfCheetah's ``x_velocity``), ``terminated``. To score a reward where the data
has no transition, at (s, pi(s)) for the target policy pi, or at a query (s, a), this model
predicts them (the deterministic-dynamics case of the data's conditional mean):

    next_obs(s, a) = s + D(s, a)_obs,        e_k(s, a) = D(s, a)_k    for every scalar e_k

an MLP D fitted by least squares on the dataset, its targets normalised by their standard
deviations. Quantities that do not vary in the data are predicted as their constant, and every
scalar is kept within its range in the data (``scalar_low``, ``scalar_high``): a conditional mean
lies there, while an MLP extrapolates linearly past it. MountainCar's sparse +100 and its
``terminated`` came out 3x their largest value where a rollout stepped past the goal, which no
state of the data does, and the model's Q of its own reward had MSE 84 where clipped it has 1.0.
A scalar the data shows to be a quadratic of the action (MuJoCo's control costs: Reacher's
``reward_ctrl`` = -||a||^2) is computed from the action instead, ``e_k = phi(a) . c_k`` with
``phi(a) = (1, a_i, a_i a_j)`` fitted by least squares (``exact_in_action``): its network prediction costs
about 0.003 a step where pi's actions are near zero, smaller than any of a noisy behaviour's, and
400 model steps summed that to -1.43 where the truth is -0.54 (results/README.md, Reacher).
``predict`` returns a full transition dict (obs, action, the predicted rest), the schema of
``resolvent.transitions``, so every reward reads it like a dataset row.

Where the environment's termination rule is known (``terminal``, a function of the transition's
obs, action and next_obs, 1 where it ends), the model is fitted ``split``: every scalar twice, once
on the data's transitions that go on and once on those that end, and a prediction reads the rule
at its own next state,

    d = terminal(s, a, next_obs(s, a)),    e_k = (1 - d) e_k^go(s, a) + d e_k^end(s, a)

so ``terminated`` is the rule's (0 or 1) and a scalar the ending decides (MountainCar's +100 at
the goal) is paid with it. Regressed on (s, a) alone, the flag is soft (0.01-0.9) where a step
crosses the goal, the rollout goes on past it with the rest of its weight, and a goal indicator
is paid twice (results/accuracy/mountaincar-data/).

An ensemble (``ensemble`` = E > 1 members D_1..D_E, each from its own initialisation and
batches) predicts the members' mean at a single step; a rollout under pi
(``algorithms/expansion.py``) follows every member on its own, and keeps, per query point, the
``keep`` members whose rollouts lie closest to the others' (a trimmed mean that does not depend
on the reward). Single fits of the same data differ: on HalfCheetah-Vel, five of them put 1 to 9
of 9 probes within 1.5x of per-reward FQE at the same points.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from resolvent.blocks import ROWS, in_blocks
from resolvent.data.user import load_object
from resolvent.endings import Terminal
from resolvent.operators.networks import MLP
from resolvent.rewards.probes import evaluate_reward


NOISE_REACH = 0.1   # c sigma_d / std_d above which a noisy rollout was measured to leave the data: Ant-Dir's
#                     contact forces at c = 0.3 (0.15-0.29, every probe worse; at c = 0.1, 0.05-0.1, as exact),
#                     where HalfCheetah's largest, 0.036 at c = 0.3, helped (results/accuracy/noisy-rollouts/)


@dataclass(frozen=True)
class OneStepConfig:
    """How the one-step model is fitted."""

    hidden: tuple[int, ...] = (256, 256)   # hidden layers of D
    steps: int = 50_000                    # Adam steps (a rollout under pi compounds its error: 3000
    #                                        left Reacher's closed loop diverging within 50 steps)
    lr: float = 1e-3                       # Adam learning rate (cosine-decayed to 0)
    batch_size: int = 512                  # transitions per step
    ensemble: int = 5                      # members, each from its own initialisation and batches (single fits
    #                                        of HalfCheetah-Vel put 1 to 9 of 9 probes within 1.5x of FQE)
    keep: int = 3                          # a rollout answers by the mean of the keep members closest to the
    #                                        others, per point (0: all)
    cycle: float = 1e-4                    # a point of a rollout under pi whose every member has come back within
    #                                        this distance (the data's state scale) of its state p <= 4
    #                                        steps before, at p + 1 steps running, repeats that cycle without the
    #                                        model (0: every step modelled; Pendulum's closed loop ends in a 2-cycle)
    close: bool = True                     # a point repeating its cycle before the expansion's k steps answers by
    #                                        the cycle kept up forever (exact within the model), not by the operator
    #                                        at s_k (Pendulum-Angle expert G_400: test MSE 1.4-9x lower)
    noise: float = 0.0                     # c > 0: every model step of the expansion's rollout moves each next state
    #                                        by N(0, (c sigma)^2), sigma the model's residual std on the data, and
    #                                        the answer is the mean over ``copies`` such rollouts (0: the model's own;
    #                                        c = 0.3 on HalfCheetah-Vel replay: every probe within 1.5x of FQE along
    #                                        pi's trajectories, 7/9 -> 9/9; worse on Ant-Dir, where it moves the
    #                                        contact forces by more than NOISE_REACH: results/accuracy/noisy-rollouts/)
    copies: int = 8                        # noisy rollouts averaged per point (noise > 0; 4 to 32 alike on HalfCheetah)
    noise_cap: float = NOISE_REACH         # no state dimension moved by more than this fraction of the data's std a
    #                                        step: c sigma_d capped at noise_cap std_d (0: uncapped; Ant-Dir's contact
    #                                        forces, whose residual is 0.5-0.98 of their std, kept at 0.1 of it)


class OneStepModel(NamedTuple):
    """A fitted one-step model: parameters and the (de)normalisation of inputs and targets."""

    params: dict
    x_mean: np.ndarray          # (dx,) input normalisation of (s, a)
    x_std: np.ndarray           # (dx,)
    y_mean: np.ndarray          # (dy,) target normalisation
    y_std: np.ndarray           # (dy,) (0 for a quantity constant in the data)
    keys: tuple[str, ...]       # scalar quantities predicted, after the ds next_obs deltas
    hidden: tuple[int, ...]
    low: np.ndarray | None = None    # (ds,) the data's state range (obs and next_obs): a rollout's
    high: np.ndarray | None = None   # (ds,) bounds (None: a model saved before they were kept)
    keep: int = 0                    # members a rollout keeps per point (0: all)
    scalar_low: np.ndarray | None = None    # (k,) each scalar quantity's range in the data: predictions
    scalar_high: np.ndarray | None = None   # (k,) are kept within it (None: a model saved before)
    exact: np.ndarray | None = None   # (k, p) c_k of the scalars that are phi(a) . c_k in the data,
    #                                   NaN rows for those the network predicts (None: a model saved before)
    split: bool = False               # every scalar predicted for a transition that goes on and one that
    #                                   ends (2k columns, ``scalar_low``, ``exact`` too), blended by ``terminal``
    terminal: Terminal | None = None  # the environment's termination rule (a split model's; saved by its name
    #                                   where it has one, a ``RuleRef``)
    cycle: float = OneStepConfig.cycle  # a rollout under pi repeats a cycle its points come back to within this
    #                                   (``OneStepConfig.cycle``; a model saved before it was kept: the default)
    close: bool = OneStepConfig.close   # a point in a cycle answers by it kept up forever (``OneStepConfig.close``)
    residual: np.ndarray | None = None  # (ds,) sigma: the std of next_obs - D(s, a) over the data (None: a model
    #                                     saved before it was kept)
    noise: float = OneStepConfig.noise  # the rollout's noise c sigma per step (``OneStepConfig.noise``; 0: none)
    copies: int = OneStepConfig.copies  # the noisy rollouts averaged per point (``OneStepConfig.copies``)
    noise_cap: float = OneStepConfig.noise_cap  # each dimension's noise at most this fraction of its std
    #                                             (``OneStepConfig.noise_cap``; a model saved before it was kept: 0)

    @property
    def members(self) -> int:
        """E: an ensemble's parameters are stacked on a leading axis (none for one model)."""
        kernel = self.params["params"]["Dense_0"]["kernel"]
        return int(kernel.shape[0]) if np.ndim(kernel) == 3 else 1

    @property
    def kept(self) -> int:
        """m: the members a rollout keeps per point (``kept_members``)."""
        return kept_members(self.keep, self.members)


class RuleRef:
    """A termination rule named ``MODULE:ATTR`` (or ``FILE.py:ATTR``), imported at its first call:
    a saved model names its rule by ``ref``."""

    def __init__(self, ref: str):
        self.ref, self._rule = ref, None

    def __call__(self, features):
        if self._rule is None:
            self._rule = load_object(self.ref, "termination rule")
        return self._rule(features)


def kept_members(keep: int, members: int) -> int:
    """m = keep, or all E members for keep = 0 or keep > E."""
    return min(keep or members, members)


def targets(features: Mapping[str, np.ndarray]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Regression targets (n, ds + k): next_obs - obs, then every scalar quantity."""
    keys = tuple(k for k in features if k not in ("obs", "action", "next_obs"))
    obs = np.asarray(features["obs"], np.float32)
    cols = [np.asarray(features["next_obs"], np.float32) - obs]
    cols += [np.asarray(features[k], np.float32)[:, None] for k in keys]
    return np.concatenate(cols, -1), keys


def ends(features: Mapping[str, np.ndarray]) -> np.ndarray:
    """(n,) bool: the data's transitions that end, for a ``split`` fit (one clear error where the
    data cannot tell: no ``terminated`` flag, or no transition that ends)."""
    if "terminated" not in features:
        raise ValueError("a termination rule needs the dataset's `terminated` flag, which it does not store")
    end = np.asarray(features["terminated"]) > 0.5
    if not end.any():
        raise ValueError("a termination rule was given, but no transition of the dataset terminates: the model "
                         "cannot learn what an ending pays; leave the rule out")
    return end


def split_targets(y: np.ndarray, k: int, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A split fit's targets (n, ds + 2k), the scalars twice, and its mask (n, ds + 2k): the
    state deltas on every row, the first copy on the rows that go on, the second on those that end."""
    ds = y.shape[1] - k
    mask = np.ones((len(y), ds + 2 * k), np.float32)
    mask[end, ds:ds + k] = 0.0
    mask[~end, ds + k:] = 0.0
    return np.concatenate([y, y[:, ds:]], 1), mask


def action_terms(action, xp=jnp):
    """phi(a) = (1, a_i, a_i a_j for i <= j): (n, 1 + da + da (da + 1) / 2), in ``xp`` (jnp or np)."""
    i, j = np.triu_indices(action.shape[1])
    return xp.concatenate([xp.ones((action.shape[0], 1), action.dtype), action, action[:, i] * action[:, j]], -1)


def exact_in_action(features: Mapping[str, np.ndarray], keys: tuple[str, ...], tol: float = 1e-4,
                    rows: int = 100_000) -> np.ndarray:
    """(k, p): for every scalar the data shows to be a quadratic of the action, its c_k with
    e_k = phi(a) . c_k (least squares on the first ``rows`` transitions, the residual's RMS within
    ``tol`` of the scalar's standard deviation); NaN rows for every other scalar, and for all where
    the data has fewer than 4p transitions or the scalar is constant."""
    a = np.asarray(features["action"], np.float64)[:rows]                             # (n, da)
    phi = action_terms(a, np)                                                          # (n, p)
    out = np.full((len(keys), phi.shape[1]), np.nan)
    if not keys:
        return out
    e = np.stack([np.asarray(features[key], np.float64)[:rows] for key in keys], 1)   # (n, k)
    varies = e.std(0) >= 1e-6                                                          # (k,)
    if len(a) < 4 * phi.shape[1] or not varies.any():
        return out
    c = np.linalg.lstsq(phi, e[:, varies], rcond=None)[0]                             # (p, k'): one solve for all
    fits = np.sqrt(np.mean((phi @ c - e[:, varies]) ** 2, 0)) <= tol * e[:, varies].std(0)   # (k',)
    out[np.flatnonzero(varies)[fits]] = c[:, fits].T
    return out


def check(config: OneStepConfig) -> None:
    """One clear error for an ensemble setting that cannot be fitted."""
    if config.ensemble < 1 or not 0 <= config.keep <= config.ensemble:
        raise ValueError(f"onestep: ensemble must be >= 1 members and keep between 0 (all) and ensemble, "
                         f"got ensemble={config.ensemble}, keep={config.keep}")
    if not config.cycle >= 0:
        raise ValueError(f"onestep: cycle is a distance in the data's state scale, >= 0 (0: off), got {config.cycle}")
    if not config.noise >= 0 or config.copies < 1:
        raise ValueError(f"onestep: noise is a multiple of the residual's std, >= 0 (0: off), and copies >= 1 "
                         f"rollouts, got noise={config.noise}, copies={config.copies}")
    if not config.noise_cap >= 0:
        raise ValueError(f"onestep: noise_cap is a fraction of the data's state std, >= 0 (0: uncapped), "
                         f"got {config.noise_cap}")


def fit(config: OneStepConfig, key: jax.Array, features: Mapping[str, np.ndarray], x_mean: np.ndarray,
        x_std: np.ndarray, split: bool = False) -> OneStepModel:
    """Least squares ``min_D E_data ||D(x) - y||^2`` on normalised inputs and targets, for each
    member of the ensemble (vmapped: its own initialisation and batches). ``split``: the scalars
    twice, each copy's squared error averaged over its own rows only (those that go on, those
    that end), so the few transitions that end weigh as much as the rest:

        min_D sum_j E_data[m_j (D_j(x) - y_j)^2] / E_data[m_j]"""
    check(config)
    y, keys = targets(features)                                              # (n, dy)
    mask, end = None, None
    if split:
        end = ends(features)
        y, mask = split_targets(y, len(keys), end)                           # (n, ds + 2k) each
        y_mean = (y * mask).sum(0) / mask.sum(0)
        y_std = np.sqrt(((y - y_mean) ** 2 * mask).sum(0) / mask.sum(0))
    else:
        y_mean, y_std = y.mean(0), y.std(0)
    y_std = np.where(y_std < 1e-6, 0.0, y_std)   # 0: a quantity constant in the data is predicted as its mean
    x = (np.concatenate([features["obs"], features["action"]], -1) - x_mean) / x_std   # (n, dx)
    xj, yj = jnp.asarray(x, jnp.float32), jnp.asarray((y - y_mean) / np.where(y_std > 0, y_std, 1.0), jnp.float32)
    mj = None if mask is None else jnp.asarray(mask)
    net = MLP(tuple(config.hidden), y.shape[1])
    k_init, k_steps = jax.random.split(key)
    opt = optax.adam(optax.cosine_decay_schedule(config.lr, config.steps))

    def objective(p, idx):
        err = (net.apply(p, xj[idx]) - yj[idx]) ** 2                         # (b, dy)
        if mj is None:
            return jnp.mean(err)
        m = mj[idx]                                                          # (b, dy)
        return jnp.mean((m * err).sum(0) / jnp.maximum(m.sum(0), 1.0))

    def member_step(params, opt_state, k):
        idx = jax.random.randint(k, (config.batch_size,), 0, xj.shape[0])   # (b,)
        value, grads = jax.value_and_grad(objective)(params, idx)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    if config.ensemble == 1:
        params = net.init(k_init, xj[:1])
        update, init_opt = member_step, opt.init
    else:   # parameters (E, ...): every member its own initialisation and batches
        params = jax.vmap(lambda k: net.init(k, xj[:1]))(jax.random.split(k_init, config.ensemble))
        update = lambda p, o, k: jax.vmap(member_step)(p, o, jax.random.split(k, config.ensemble))  # noqa: E731
        init_opt = jax.vmap(opt.init)

    def step(carry, k):
        params, opt_state, value = update(*carry, k)
        return (params, opt_state), value

    run = jax.jit(lambda carry, ks: jax.lax.scan(step, carry, ks))
    carry, step_keys = (params, init_opt(params)), jax.random.split(k_steps, config.steps)
    chunk = max(1, config.steps // 50)   # the same steps, scanned in chunks for the progress bar
    with tqdm(total=config.steps, desc="one-step model", unit="step", leave=False, disable=config.steps < 5000) as bar:
        for i in range(0, config.steps, chunk):
            carry, _ = run(carry, step_keys[i:i + chunk])
            bar.update(len(step_keys[i:i + chunk]))
    params = jax.tree_util.tree_map(np.asarray, carry[0])
    states = np.concatenate([features["obs"], features["next_obs"]], 0)
    ds = states.shape[1]
    if split:   # each copy's range and exact quadratics on its own rows
        k, scal = len(keys), y[:, ds:]
        rows = (~end, end)
        low = np.concatenate([scal[r, i * k:(i + 1) * k].min(0) for i, r in enumerate(rows)])
        high = np.concatenate([scal[r, i * k:(i + 1) * k].max(0) for i, r in enumerate(rows)])
        exact = np.concatenate([exact_in_action({key: np.asarray(v)[r] for key, v in features.items()}, keys)
                                for r in rows])
    else:
        low, high, exact = y[:, ds:].min(0), y[:, ds:].max(0), exact_in_action(features, keys)
    model = OneStepModel(params, np.asarray(x_mean, np.float32), np.asarray(x_std, np.float32),
                         y_mean.astype(np.float32), y_std.astype(np.float32), keys, tuple(config.hidden),
                         states.min(0).astype(np.float32), states.max(0).astype(np.float32),
                         keep=config.keep, scalar_low=low, scalar_high=high, exact=exact, split=split,
                         cycle=config.cycle, close=config.close, noise=config.noise, copies=config.copies,
                         noise_cap=config.noise_cap)
    return model._replace(residual=residual_std(model, features))


def residual_std(model: OneStepModel, features: Mapping[str, np.ndarray], chunk: int = 50_000) -> np.ndarray:
    """sigma (ds,): the std over the data's transitions of next_obs - D(s, a), D the members' mean
    (in-sample: where pi's path leaves the data the model errs more)."""
    obs, action, nxt = (np.asarray(features[k], np.float32) for k in ("obs", "action", "next_obs"))
    ds = obs.shape[1]

    def delta(i: int) -> np.ndarray:     # D's next_obs - obs (no termination rule needed: the scalars are not read)
        y = np.asarray(member_predictions(model, obs[i:i + chunk], action[i:i + chunk]).mean(0))[:, :ds]
        return y * model.y_std[:ds] + model.y_mean[:ds]
    res = np.concatenate([nxt[i:i + chunk] - obs[i:i + chunk] - delta(i) for i in range(0, len(obs), chunk)])
    return res.std(0).astype(np.float32)


def residual_ratio(model: OneStepModel) -> np.ndarray:
    """(ds,) sigma_d / std_d: the model's residual std over the data's state std, per dimension
    (0 where the state is constant); the model must hold its ``residual``."""
    sigma = np.asarray(model.residual, np.float64)                                          # (ds,)
    std = np.asarray(model.x_std, np.float64)[:len(sigma)]                                  # (ds,) the data's state std
    return np.divide(sigma, std, out=np.zeros_like(sigma), where=std > 0)


def noise_scale(model: OneStepModel, noise: float | None = None) -> np.ndarray:
    """(ds,) a noisy rollout's std per state dimension and model step, c sigma_d, capped at
    ``noise_cap`` std_d where noise_cap > 0 (std_d the data's state std; c the model's ``noise``
    unless given); the model must hold its ``residual``."""
    sigma = np.asarray(model.residual, np.float32)                                          # (ds,)
    scale = np.float32(model.noise if noise is None else noise) * sigma                     # (ds,) c sigma
    if model.noise_cap > 0:
        return np.minimum(scale, np.float32(model.noise_cap) * np.asarray(model.x_std, np.float32)[:len(sigma)])
    return scale


def noise_reach(model: OneStepModel) -> str | None:
    """Where a noisy rollout moves some state dimension d by more than ``NOISE_REACH`` of the
    data's std each model step, c sigma_d / std_d > NOISE_REACH (only with ``noise_cap`` 0 or
    above it): a message naming it, the cap and the largest c that keeps every dimension within;
    else (no noise, no residual, all within) None."""
    if not model.noise or model.residual is None:
        return None
    ratio = residual_ratio(model)                                                           # (ds,)
    reach = model.noise * ratio if model.noise_cap <= 0 else np.minimum(model.noise * ratio, model.noise_cap)
    d = int(np.argmax(reach))
    if reach[d] <= NOISE_REACH:
        return None
    return (f"onestep noise {model.noise:g} moves state dimension {d} by {reach[d]:.2g} of the data's "
            f"std every model step ({int((reach > NOISE_REACH).sum())} of {len(ratio)} dimensions above "
            f"{NOISE_REACH:g}; the model's residual there is {ratio[d]:.2g} of it): the copies leave the data, as "
            f"on Ant-Dir at 0.3 uncapped, where every probe came out worse; --onestep.noise-cap {NOISE_REACH:g} "
            f"(the default), or --onestep.noise {NOISE_REACH / ratio[d]:.3g} or less, keeps every dimension within "
            f"{NOISE_REACH:g}")


def predict(model: OneStepModel, obs, action) -> dict:
    """The transition quantities at (obs (n, ds), action (n, da)): obs, action, the predicted
    next_obs and scalars (n,) (an ensemble's mean)."""
    return transition(model, obs, action, member_predictions(model, obs, action).mean(0))


def rollout_step(model: OneStepModel, obs, action, scored=None) -> dict:
    """Every member's transition from its own state: obs (E n, ds), action (E n, da), member e's
    rows at [e n, (e + 1) n); the transition dict (E n rows). ``scored`` (E n, da): the action the
    transition holds and its exact action terms are computed at, where the model steps at another
    (``action``: the rollout's supported dynamics, ``expansion.rollout``); None: ``action``.
    Compiled whole, once per model and number of rows (``STEPS``), with its parameters put on the
    device once (a model loaded from disk holds numpy arrays, which every call would copy to an
    accelerator again), but for a ``split`` model, whose termination rule is the user's Python,
    checked as it is asked."""
    obs, action = jnp.asarray(obs, jnp.float32), jnp.asarray(action, jnp.float32)
    scored = action if scored is None else jnp.asarray(scored, jnp.float32)
    if model.split:
        return member_step(model, obs, action, scored)
    held = next((entry for entry in STEPS if entry[0] is model), None)
    if held is None:
        held = (model, jax.jit(lambda params, o, a, c: member_step(model._replace(params=params), o, a, c)),
                jax.device_put(model.params))
        STEPS.insert(0, held)
        del STEPS[STEPS_KEPT:]
    _, step, params = held
    return step(params, obs, action, scored)


STEPS: list = []    # [(model, its compiled step, its parameters on the device)], the last used first: a model
#                     is held, so never mistaken
STEPS_KEPT = 4      # the models whose compiled steps are kept


def member_step(model: OneStepModel, obs: jax.Array, action: jax.Array, scored: jax.Array | None = None) -> dict:
    """``rollout_step``'s computation: every member's normalised prediction at its own rows, then
    the transition they make, held at ``scored`` (default: ``action``)."""
    x = (jnp.concatenate([obs, action], -1) - model.x_mean) / model.x_std   # (E n, dx)
    e = model.members
    y = _apply(model.hidden, model.params, x.reshape(e, -1, x.shape[-1]), "own" if e > 1 else "single")  # (E, n, dy)
    return transition(model, obs, action if scored is None else scored, y.reshape(-1, y.shape[-1]))


def transition(model: OneStepModel, obs, action, y) -> dict:
    """The transition dict of normalised predictions y (n, dy) at (obs, action), every scalar
    within its range in the data (a ``split`` model's blended by its rule at the predicted next
    state, ``terminal_flags``)."""
    obs, action = jnp.asarray(obs, jnp.float32), jnp.asarray(action, jnp.float32)
    y = y * model.y_std + model.y_mean                                       # (n, dy)
    ds = obs.shape[1]
    scalars = y[:, ds:]                                                      # (n, k)
    if model.scalar_low is not None:
        scalars = jnp.clip(scalars, model.scalar_low, model.scalar_high)
    if model.exact is not None and np.isfinite(model.exact[:, 0]).any():   # quadratics of the action: computed
        computed = action_terms(action) @ jnp.asarray(np.nan_to_num(model.exact).T, jnp.float32)   # (n, k)
        scalars = jnp.where(np.isfinite(model.exact[:, 0]), computed, scalars)
    out = {"obs": obs, "action": action, "next_obs": obs + y[:, :ds]}
    if model.split:
        k = len(model.keys)
        d = terminal_flags(model.terminal, out)                              # (n,)
        scalars = scalars[:, :k] + d[:, None] * (scalars[:, k:] - scalars[:, :k])   # (n, k)
    out.update({k: scalars[:, i] for i, k in enumerate(model.keys)})
    return out


def terminal_flags(rule: Terminal | None, features: Mapping, what: str = "one-step model's transitions") -> jax.Array:
    """d (n,) = rule(features), checked: one value per transition, each within [0, 1]."""
    if rule is None:
        raise ValueError("this one-step model was fitted for a termination rule, and none is set (one given in "
                         "Python is not saved): model.onestep = model.onestep._replace(terminal=rule)")
    d = evaluate_reward(rule, features, what, "termination rule")
    if not bool(jnp.all((d >= 0.0) & (d <= 1.0))):
        raise ValueError(f"termination rule returned values outside [0, 1] on the {what} "
                         f"(1 where the transition ends, 0 where it goes on)")
    return d


def rule_disagreement(rule: Terminal, features: Mapping[str, np.ndarray]) -> tuple[int, int]:
    """(transitions where the rule and the data's ``terminated`` flag differ, transitions): the
    rule read on the data's own (obs, action, next_obs)."""
    inputs = {k: jnp.asarray(features[k], jnp.float32) for k in ("obs", "action", "next_obs")}
    d = np.asarray(terminal_flags(rule, inputs, "dataset's transitions")) > 0.5
    return int((d != (np.asarray(features["terminated"]) > 0.5)).sum()), len(d)


def member_weights(apart: np.ndarray, keep: int) -> np.ndarray:
    """w (E, n): 1/m on the m = keep (0 or more than E: all) members least apart from the others
    at each point (ties to the lower index), 0 elsewhere."""
    e, n = apart.shape
    m = kept_members(keep, e)
    kept = np.argsort(apart, 0, kind="stable")[:m]                                     # (m, n)
    w = np.zeros((e, n))
    w[kept, np.arange(n)] = 1.0 / m
    return w


def member_predictions(model: OneStepModel, obs, action) -> jax.Array:
    """Every member's normalised prediction (E, n, dy)."""
    obs, action = jnp.asarray(obs, jnp.float32), jnp.asarray(action, jnp.float32)
    x = (jnp.concatenate([obs, action], -1) - model.x_mean) / model.x_std
    return _apply(model.hidden, model.params, x, "shared" if model.members > 1 else "single")


_APPLY: dict = {}


def _apply(hidden: tuple[int, ...], params, x, how: str) -> jax.Array:
    """The members' predictions (E, n, dy), one jitted apply per network shape: ``single`` one
    model at x (n, dx), ``shared`` every member at x (n, dx), ``own`` member e at x[e] (E, n, dx)."""
    bias = np.shape(params["params"][f"Dense_{len(hidden)}"]["bias"])                 # (out,) or (E, out)
    out, members = int(bias[-1]), 1 if how == "single" else int(bias[0])
    if (hidden, out, how, members) not in _APPLY:
        apply = MLP(hidden, out).apply
        if how == "single":
            fn = lambda p, x: apply(p, x)[None]  # noqa: E731
        else:
            fn = jax.vmap(apply, (0, None) if how == "shared" else (0, 0))
        # in blocks of the points (about ROWS rows a block, all members'): the same answers, in cache
        blocked = in_blocks(fn, max(1, ROWS // members), axis=1 if how == "own" else 0, out_axis=1, arg=1)
        _APPLY[(hidden, out, how, members)] = jax.jit(
            lambda p, x: blocked(p, x.reshape(-1, x.shape[-1]) if how == "single" else x))
    return _APPLY[(hidden, out, how, members)](params, x)


def to_arrays(model: OneStepModel, prefix: str = "onestep_") -> dict[str, np.ndarray]:
    """The model as flat arrays (for a model's .npz)."""
    flat = {f"{prefix}param/{'/'.join(str(getattr(k, 'key', k)) for k in path)}": np.asarray(v)
            for path, v in jax.tree_util.tree_flatten_with_path(model.params)[0]}
    return {**flat, f"{prefix}x_mean": model.x_mean, f"{prefix}x_std": model.x_std,
            f"{prefix}y_mean": model.y_mean, f"{prefix}y_std": model.y_std,
            f"{prefix}keys": np.array(model.keys, str), f"{prefix}hidden": np.array(model.hidden, np.int64),
            **({f"{prefix}low": model.low, f"{prefix}high": model.high} if model.low is not None else {}),
            f"{prefix}keep": np.int64(model.keep), f"{prefix}cycle": np.float64(model.cycle),
            f"{prefix}close": np.bool_(model.close), f"{prefix}noise": np.float64(model.noise),
            f"{prefix}copies": np.int64(model.copies), f"{prefix}noise_cap": np.float64(model.noise_cap),
            **({f"{prefix}residual": model.residual} if model.residual is not None else {}),
            **({f"{prefix}scalar_low": model.scalar_low, f"{prefix}scalar_high": model.scalar_high}
               if model.scalar_low is not None else {}),
            **({f"{prefix}exact": model.exact} if model.exact is not None else {}),
            **({f"{prefix}split": np.bool_(True)} if model.split else {}),
            **({f"{prefix}terminal": np.array(model.terminal.ref)} if isinstance(model.terminal, RuleRef) else {})}


def from_arrays(arrays: Mapping[str, np.ndarray], prefix: str = "onestep_") -> OneStepModel | None:
    """The inverse of ``to_arrays``; None where the arrays hold no model."""
    if f"{prefix}x_mean" not in arrays:
        return None
    params: dict = {}
    for name, v in arrays.items():
        if name.startswith(f"{prefix}param/"):
            node = params
            *path, leaf = name[len(prefix) + 6:].split("/")
            for p in path:
                node = node.setdefault(p, {})
            node[leaf] = np.asarray(v)
    return OneStepModel(params, arrays[f"{prefix}x_mean"], arrays[f"{prefix}x_std"], arrays[f"{prefix}y_mean"],
                        arrays[f"{prefix}y_std"], tuple(str(k) for k in arrays[f"{prefix}keys"]),
                        tuple(int(h) for h in arrays[f"{prefix}hidden"]), arrays.get(f"{prefix}low"),
                        arrays.get(f"{prefix}high"), int(arrays.get(f"{prefix}keep", 0)),
                        arrays.get(f"{prefix}scalar_low"), arrays.get(f"{prefix}scalar_high"),
                        arrays.get(f"{prefix}exact"), bool(arrays.get(f"{prefix}split", False)),
                        RuleRef(str(arrays[f"{prefix}terminal"])) if f"{prefix}terminal" in arrays else None,
                        float(arrays.get(f"{prefix}cycle", OneStepConfig.cycle)),
                        bool(arrays.get(f"{prefix}close", OneStepConfig.close)), arrays.get(f"{prefix}residual"),
                        float(arrays.get(f"{prefix}noise", OneStepConfig.noise)),
                        int(arrays.get(f"{prefix}copies", OneStepConfig.copies)),
                        float(arrays.get(f"{prefix}noise_cap", 0.0)))
