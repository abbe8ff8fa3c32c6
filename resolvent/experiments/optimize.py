"""Reward transfer for offline policy optimisation, end to end (paper, section 6.2).

For one family and dataset kind: load the offline dataset, draw 32 training rewards and m
reference points; train every method's control operator (all seeds at once, vmapped) with
operator DQN on a discretised action grid (one action dimension: Pendulum) or operator BCQ
(continuous actions: HalfCheetah, Ant); along training, run the greedy policy of each seed in
the real environment, several episodes in lockstep, and log its episodic return under the
family's original reward and under ``n_return_rewards`` test rewards, zero-shot: the same
network, fed each reward's values at the reference points. The TD3 target policy's return
under the same rewards is the reference. Checkpoints, resume, inference models (with
``policy(reward)``), results.json and the plot ``returns.png`` as in ``evaluate``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms import bcq, dqn
from resolvent.config import narrow
from resolvent.data import load_transitions, reference_indices
from resolvent.evaluation import actor_returns, episodic_returns
from resolvent.experiments.optimize_config import ALGORITHMS as ALGORITHMS  # re-exported: its old home
from resolvent.experiments.optimize_config import METHODS as METHODS
from resolvent.experiments.optimize_config import OptimizeConfig
from resolvent.experiments.plots import plot_returns
from resolvent.experiments.rundir import RunDir
from resolvent.experiments.runner import run_experiment, train_loop
from resolvent.families import get_family
from resolvent.keys import named_key
from resolvent.model import Arch, Control, OperatorModel
from resolvent.operators import make_network
from resolvent.policies import load_target_policy


@dataclass
class ControlProblem:
    """What the methods share: data on device, rewards, reference points, action space."""

    family: object
    algorithm: str               # "dqn" or "bcq"
    features: dict               # raw transition quantities (actions on the grid for DQN)
    s: jax.Array                 # (n, ds) normalised states
    next_s: jax.Array            # (n, ds)
    x: jax.Array                 # (n, dx) normalised (s, a)
    done: jax.Array              # (n,)
    x_mean: np.ndarray           # (dx,)
    x_std: np.ndarray            # (dx,)
    low: np.ndarray              # (da,) action bounds
    high: np.ndarray
    grid: np.ndarray | None      # DQN: (A, da) grid actions
    ref_idx: np.ndarray          # (m,)
    r_train: jax.Array           # (R, n)
    return_names: list[str]      # "original", then the test rewards
    return_params: np.ndarray    # (1 + n_return_rewards,)
    target_returns: dict         # name -> the TD3 target's mean return

    @property
    def ds(self) -> int:
        return self.s.shape[1]

    @property
    def enc_train(self) -> jax.Array:
        return self.r_train[:, self.ref_idx]                             # (R, m)

    @property
    def xi(self) -> jax.Array:
        return self.x[self.ref_idx]                                      # (m, dx)

    def norm_s(self, obs) -> jax.Array:
        return (jnp.asarray(obs, jnp.float32) - self.x_mean[:self.ds]) / self.x_std[:self.ds]


def resolve_algorithm(cfg: OptimizeConfig, action_dim: int) -> str:
    if cfg.algorithm != "auto":
        return cfg.algorithm
    return "dqn" if action_dim == 1 else "bcq"


def prepare(cfg: OptimizeConfig, progress: bool = True) -> ControlProblem:
    """Dataset, rewards, reference points, action grid and the target's reference returns."""
    family = get_family(cfg.family)
    actor = load_target_policy(family.name)
    data = load_transitions(family, cfg.dataset, cfg.data_seed, actor)
    space = gym.make(family.env_id).action_space
    low, high = space.low.astype(np.float32), space.high.astype(np.float32)
    algorithm = resolve_algorithm(cfg, len(low))
    features = {k: np.asarray(data[k]) for k in family.feature_keys}
    grid = None
    if algorithm == "dqn":
        grid = dqn.action_grid(low, high, cfg.n_actions)                 # (A, da)
        features["action"] = grid[dqn.nearest_actions(features["action"], grid)]
    x_raw = np.concatenate([features["obs"], features["action"]], -1)    # (n, dx)
    # a (near-)constant input in the data (Ant's contact forces) keeps scale 1: the policy
    # meets other values in the environment, which must not be blown up by 1/std
    std = x_raw.std(0)
    x_mean, x_std = x_raw.mean(0).astype(np.float32), np.where(std < 1e-3, 1.0, std).astype(np.float32)
    ds = features["obs"].shape[1]
    k_train, k_test = named_key(cfg.seed, "train-rewards"), named_key(cfg.seed, "test-rewards")
    train_params = (jnp.asarray(cfg.train_params, jnp.float32) if cfg.train_params
                    else family.sample(k_train, cfg.n_train_rewards, "train"))
    test_params = stratified_test_params(family, k_test, cfg.n_return_rewards)
    return_params = np.concatenate([[family.original_param], test_params]).astype(np.float32)
    names = ["original"] + [f"{family.param_name}={p:+.3f}" for p in test_params]
    target = actor_returns(family, actor, [family.reward_callable(p) for p in return_params],
                           max(cfg.eval_episodes, 10), eval_seed(cfg), progress).mean(1)
    return ControlProblem(
        family=family, algorithm=algorithm, features=features,
        s=jnp.asarray((features["obs"] - x_mean[:ds]) / x_std[:ds]),
        next_s=jnp.asarray((features["next_obs"] - x_mean[:ds]) / x_std[:ds]),
        x=jnp.asarray((x_raw - x_mean) / x_std), done=jnp.asarray(data["terminated"], jnp.float32),
        x_mean=x_mean, x_std=x_std, low=low, high=high, grid=grid,
        ref_idx=reference_indices(len(x_raw), cfg.m, cfg.seed),
        r_train=family.rewards(train_params, {k: jnp.asarray(v) for k, v in features.items()}),
        return_names=names, return_params=return_params,
        target_returns={n: float(v) for n, v in zip(names, target)})


def stratified_test_params(family, key: jax.Array, n: int) -> np.ndarray:
    """n test parameters, the k-th uniform in the k-th of n equal slices of the test range:
    drawn from the test distribution, yet spread over it."""
    lo, hi = family.test_range
    u = np.asarray(jax.random.uniform(key, (n,)))
    return (lo + (np.arange(n) + u) / max(n, 1) * (hi - lo)).astype(np.float32)


def eval_seed(cfg: OptimizeConfig) -> int:
    """Reset seed of the evaluation episodes: the same starts at every evaluation."""
    return 7_000 + cfg.seed


def arch(cfg: OptimizeConfig) -> Arch:
    return Arch(hidden=tuple(cfg.hidden), features=cfg.features, heads=cfg.heads,
                vae_hidden=tuple(cfg.vae_hidden), actor_hidden=tuple(cfg.actor_hidden))


def control_meta(cfg: OptimizeConfig, p: ControlProblem) -> Control:
    """What an inference model needs to act (saved with it)."""
    low, high = tuple(map(float, p.low)), tuple(map(float, p.high))
    if p.algorithm == "dqn":
        return Control("dqn", low, high, grid=tuple(tuple(map(float, g)) for g in np.atleast_2d(p.grid)))
    return Control("bcq", low, high, phi=cfg.phi, eval_samples=cfg.eval_samples)


class Method:
    """One method's trainer, initializer, data and acting function, for either algorithm."""

    def __init__(self, method: str, cfg: OptimizeConfig, p: ControlProblem):
        network = make_network(method, cfg.gamma, cfg.hidden, cfg.features, 0, cfg.heads)
        self.act = control_meta(cfg, p).make_act(network, arch(cfg), p.x_mean, p.x_std)
        if p.algorithm == "dqn":
            config = narrow(dqn.DQNConfig, cfg)
            grid_norm = (p.grid - p.x_mean[p.ds:]) / p.x_std[p.ds:]
            self.data = dqn.DQNData(x=p.x, next_s=p.next_s, actions=jnp.asarray(grid_norm),
                                    rewards=p.r_train, done=p.done, xi=p.xi, enc=p.enc_train)
            self.init = dqn.make_initializer(network, config)
            self.train = dqn.make_trainer(network, config, cfg.eval_every)
            self.policy_params = lambda state: state.params  # noqa: E731
            return
        config = narrow(bcq.BCQConfig, cfg)
        nets = bcq.make_nets(network, len(p.low), config, cfg.vae_hidden, cfg.actor_hidden, cfg.features)
        a_shift, a_scale = bcq.action_affine(p.low, p.high, p.x_mean[p.ds:], p.x_std[p.ds:])
        a_unit = 2.0 * (p.features["action"] - p.low) / (p.high - p.low) - 1.0
        self.data = bcq.BCQData(s=p.s, a=jnp.asarray(a_unit, jnp.float32), next_s=p.next_s,
                                rewards=p.r_train, done=p.done, xi=p.xi, enc=p.enc_train,
                                a_shift=a_shift, a_scale=a_scale)
        self.init = bcq.make_initializer(nets, config)
        self.train = bcq.make_trainer(nets, config, cfg.eval_every)
        self.policy_params = bcq.policy_params


def returns_of(method: Method, params, cfg: OptimizeConfig, p: ControlProblem, key: jax.Array,
               desc: str) -> np.ndarray:
    """Mean episodic returns (S, 1 + n_return_rewards) of every seed's zero-shot policies."""
    n_rew, n_ep = len(p.return_params), cfg.eval_episodes
    rewards = [p.family.reward_callable(v) for v in p.return_params]
    enc = jnp.stack([p.family.reward(jnp.float32(v), {k: jnp.asarray(a[p.ref_idx])
                                                      for k, a in p.features.items()})
                     for v in p.return_params])                           # (Rp, m)
    enc_rows = jnp.repeat(enc, n_ep, axis=0)                              # (Rp E, m)
    act = jax.jit(jax.vmap(method.act, in_axes=(0, 0, None, None, 0)))
    counter = {"t": 0}

    def policy(obs):                                                      # (S Rp, E, ds)
        s = p.norm_s(obs).reshape(cfg.seeds, n_rew * n_ep, -1)             # (S, Rp E, ds)
        keys = jax.random.split(jax.random.fold_in(key, counter["t"]), cfg.seeds)
        counter["t"] += 1
        return np.asarray(act(params, s, p.xi, enc_rows, keys)).reshape(obs.shape[:2] + (-1,))

    ret = episodic_returns(p.family, policy, rewards * cfg.seeds, n_ep, eval_seed(cfg), desc)
    return ret.mean(1).reshape(cfg.seeds, n_rew)                          # (S, Rp)


def run_method(method: str, cfg: OptimizeConfig, p: ControlProblem, run: RunDir, resume: bool) -> dict:
    """Train one method on all seeds, evaluating returns along training; its results entry."""
    m = Method(method, cfg, p)
    seed_ids = np.arange(cfg.seed, cfg.seed + cfg.seeds)
    base = named_key(cfg.seed, method)
    k_init, k_train, k_eval = jax.random.split(base, 3)
    keys = jax.vmap(lambda s: jax.random.fold_in(k_train, s))(seed_ids)   # (S, 2)
    state = m.init(jax.vmap(lambda s: jax.random.fold_in(k_init, s))(seed_ids), m.data)
    last = {}

    def log(state, step, loss, seconds):
        ret = returns_of(m, m.policy_params(state), cfg, p, jax.random.fold_in(k_eval, step),
                         f"{method} returns @{step}")
        losses = [None] * cfg.seeds if loss is None else [float(v) for v in loss]
        run.append_metrics([{"method": method, "seed": int(s), "step": step, "return": float(r[0]),
                             "test_returns": dict(zip(p.return_names[1:], map(float, r[1:]))),
                             "loss": v, "seconds": round(seconds, 3)}
                            for s, r, v in zip(seed_ids, ret, losses)])
        last["ret"] = ret
        return {"ret": f"{ret[:, 0].mean():.1f}", "loss": "-" if loss is None else f"{float(np.mean(loss)):.3g}"}

    state, step, seconds = train_loop(run, method, state, keys, cfg.steps, cfg.eval_every, cfg.checkpoint_every,
                                      resume, lambda state, k: m.train(state, m.data, k), log)
    ret = last.get("ret")
    inference_model(method, cfg, p, m.policy_params(state)).save(run.path / "models")
    if ret is None:   # resumed a finished method: read its last returns back
        rows = [r for r in run.read_metrics() if r["method"] == method and r["step"] == step]
        ret = np.array([[r["return"], *r["test_returns"].values()] for r in rows])
    return {"return": [float(v) for v in ret[:, 0]],
            "test_returns": {n: [float(v) for v in ret[:, i + 1]] for i, n in enumerate(p.return_names[1:])},
            "steps": step, "seconds": round(seconds, 2)}


def inference_model(method: str, cfg: OptimizeConfig, p: ControlProblem, params) -> OperatorModel:
    return OperatorModel(method=method, family=cfg.family, gamma=cfg.gamma, arch=arch(cfg),
                         params=params, xi_features={k: v[p.ref_idx] for k, v in p.features.items()},
                         x_mean=p.x_mean, x_std=p.x_std, control=control_meta(cfg, p))


def run_optimize(cfg: OptimizeConfig, out: str | Path, resume: bool = False, plot: bool = True) -> dict:
    """Run (or resume) an experiment into ``out``; returns results.json's content (the shared
    runner, ``run_experiment``)."""
    def header(cfg: OptimizeConfig, p: ControlProblem, run: RunDir) -> dict:
        return {"family": cfg.family, "dataset": cfg.dataset, "task": "optimize", "algorithm": p.algorithm,
                "target_return": p.target_returns["original"],
                "target_test_returns": {n: p.target_returns[n] for n in p.return_names[1:]}}

    return run_experiment(cfg, OptimizeConfig, out, resume, prepare, header, run_method,
                          plot_returns if plot else None)
