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

from resolvent.operators.networks import MLP


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

    @property
    def members(self) -> int:
        """E: an ensemble's parameters are stacked on a leading axis (none for one model)."""
        kernel = self.params["params"]["Dense_0"]["kernel"]
        return int(kernel.shape[0]) if np.ndim(kernel) == 3 else 1

    @property
    def kept(self) -> int:
        """m: the members a rollout keeps per point (``kept_members``)."""
        return kept_members(self.keep, self.members)


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


def fit(config: OneStepConfig, key: jax.Array, features: Mapping[str, np.ndarray], x_mean: np.ndarray,
        x_std: np.ndarray) -> OneStepModel:
    """Least squares ``min_D E_data ||D(x) - y||^2`` on normalised inputs and targets, for each
    member of the ensemble (vmapped: its own initialisation and batches)."""
    check(config)
    y, keys = targets(features)                                              # (n, dy)
    y_mean, y_std = y.mean(0), y.std(0)
    y_std = np.where(y_std < 1e-6, 0.0, y_std)   # 0: a quantity constant in the data is predicted as its mean
    x = (np.concatenate([features["obs"], features["action"]], -1) - x_mean) / x_std   # (n, dx)
    xj, yj = jnp.asarray(x, jnp.float32), jnp.asarray((y - y_mean) / np.where(y_std > 0, y_std, 1.0), jnp.float32)
    net = MLP(tuple(config.hidden), y.shape[1])
    k_init, k_steps = jax.random.split(key)
    opt = optax.adam(optax.cosine_decay_schedule(config.lr, config.steps))

    def member_step(params, opt_state, k):
        idx = jax.random.randint(k, (config.batch_size,), 0, xj.shape[0])   # (b,)
        value, grads = jax.value_and_grad(
            lambda p: jnp.mean((net.apply(p, xj[idx]) - yj[idx]) ** 2))(params)
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
    return OneStepModel(params, np.asarray(x_mean, np.float32), np.asarray(x_std, np.float32),
                        y_mean.astype(np.float32), y_std.astype(np.float32), keys, tuple(config.hidden),
                        states.min(0).astype(np.float32), states.max(0).astype(np.float32),
                        keep=config.keep, scalar_low=y[:, ds:].min(0), scalar_high=y[:, ds:].max(0),
                        exact=exact_in_action(features, keys))


def predict(model: OneStepModel, obs, action) -> dict:
    """The transition quantities at (obs (n, ds), action (n, da)): obs, action, the predicted
    next_obs and scalars (n,) (an ensemble's mean)."""
    return transition(model, obs, action, member_predictions(model, obs, action).mean(0))


def rollout_step(model: OneStepModel, obs, action) -> dict:
    """Every member's transition from its own state: obs (E n, ds), action (E n, da), member e's
    rows at [e n, (e + 1) n); the transition dict (E n rows)."""
    obs, action = jnp.asarray(obs, jnp.float32), jnp.asarray(action, jnp.float32)
    x = (jnp.concatenate([obs, action], -1) - model.x_mean) / model.x_std   # (E n, dx)
    e = model.members
    y = _apply(model.hidden, model.params, x.reshape(e, -1, x.shape[-1]), "own" if e > 1 else "single")  # (E, n, dy)
    return transition(model, obs, action, y.reshape(-1, y.shape[-1]))


def transition(model: OneStepModel, obs, action, y) -> dict:
    """The transition dict of normalised predictions y (n, dy) at (obs, action), every scalar
    within its range in the data."""
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
    out.update({k: scalars[:, i] for i, k in enumerate(model.keys)})
    return out


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
    out = int(np.shape(params["params"][f"Dense_{len(hidden)}"]["bias"])[-1])
    if (hidden, out, how) not in _APPLY:
        apply = MLP(hidden, out).apply
        if how == "single":
            fn = lambda p, x: apply(p, x.reshape(-1, x.shape[-1]))[None]  # noqa: E731
        else:
            fn = jax.vmap(apply, (0, None) if how == "shared" else (0, 0))
        _APPLY[(hidden, out, how)] = jax.jit(fn)
    return _APPLY[(hidden, out, how)](params, x)


def to_arrays(model: OneStepModel, prefix: str = "onestep_") -> dict[str, np.ndarray]:
    """The model as flat arrays (for a model's .npz)."""
    flat = {f"{prefix}param/{'/'.join(str(getattr(k, 'key', k)) for k in path)}": np.asarray(v)
            for path, v in jax.tree_util.tree_flatten_with_path(model.params)[0]}
    return {**flat, f"{prefix}x_mean": model.x_mean, f"{prefix}x_std": model.x_std,
            f"{prefix}y_mean": model.y_mean, f"{prefix}y_std": model.y_std,
            f"{prefix}keys": np.array(model.keys, str), f"{prefix}hidden": np.array(model.hidden, np.int64),
            **({f"{prefix}low": model.low, f"{prefix}high": model.high} if model.low is not None else {}),
            f"{prefix}keep": np.int64(model.keep),
            **({f"{prefix}scalar_low": model.scalar_low, f"{prefix}scalar_high": model.scalar_high}
               if model.scalar_low is not None else {}),
            **({f"{prefix}exact": model.exact} if model.exact is not None else {})}


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
                        arrays.get(f"{prefix}exact"))
