"""Reward transfer for offline policy evaluation, end to end (paper, section 6.1).

For one family and dataset kind: load the target policy, the offline dataset and the
Monte-Carlo ground truth; draw 32 training and 16 test rewards and m reference points; train
every method's operator with operator FQE (all seeds at once, vmapped); log train and test
MSE along training; checkpoint; save the inference models; write results and the plot.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from resolvent.algorithms import (FQEConfig, OperatorData, identity_encodings, make_initializer,
                                  make_predictor, make_trainer, ridge_weights)
from resolvent.data import KINDS, check_kind, load_transitions, reference_indices
from resolvent.evaluation import load_ground_truth
from resolvent.experiments.rundir import RunDir
from resolvent.families import get_family
from resolvent.model import OperatorModel
from resolvent.operators import NETWORKS, make_network
from resolvent.policies import load_target_policy

METHODS = ("attention", "linear", "vanilla", "sf")


@dataclass(frozen=True)
class EvaluateConfig:
    """An offline-policy-evaluation experiment (defaults: the paper's hyper-parameters)."""

    family: str = "pendulum-angle"     # reward family
    dataset: str = "expert"            # dataset kind: replay, expert or medium
    methods: tuple[str, ...] = METHODS  # operator networks to train
    seeds: int = 3                     # network seeds, trained at once (vmapped)
    seed: int = 0                      # experiment seed: rewards, reference points, networks
    data_seed: int = 0                 # seed of the dataset's behaviour rollouts
    steps: int = 15_000                # training steps per method
    log_every: int = 500               # steps between metric rows
    checkpoint_every: int = 2_500      # steps between checkpoints (a multiple of log_every)
    m: int = 128                       # reference points
    n_train_rewards: int = 32          # training rewards, all fed at every step
    n_test_rewards: int = 16           # unseen test rewards
    n_initial: int = 64                # ground-truth initial points y_i = (s0, a0)
    gt_tol: float = 1e-5               # rollouts run until gamma^t < gt_tol
    gamma: float = 0.99                # discount
    lr: float = 1e-3                   # Adam learning rate
    tau: float = 0.005                 # target network Polyak rate
    batch_size: int = 256              # transitions per step
    hidden: tuple[int, ...] = (256, 256)  # hidden layers of every MLP
    features: int = 64                 # output features of f, g (attention, linear, vanilla)
    sf_ridge: float = 1e-3             # ridge of the SF weight regression
    sf_fit_points: int = 8192          # dataset transitions used for that regression

    def __post_init__(self):
        get_family(self.family)
        check_kind(self.dataset)
        for m in self.methods:
            if m not in METHODS:
                hint = " (a control network: use `resolvent optimize`)" if m in NETWORKS else ""
                raise ValueError(f"unknown method {m!r} for evaluation{hint}; known: {list(METHODS)}")
        if not self.methods:
            raise ValueError("no method given")
        for name in ("seeds", "steps", "log_every", "checkpoint_every", "m", "n_train_rewards",
                     "n_test_rewards", "n_initial", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.checkpoint_every % self.log_every:
            raise ValueError("checkpoint_every must be a multiple of log_every")
        if not 0 < self.gamma < 1:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")

    @classmethod
    def from_dict(cls, d: dict) -> "EvaluateConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known - {"task"}
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}; known: {sorted(known)}")
        d = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in known}
        return cls(**d)

    def to_dict(self) -> dict:
        return {"task": "evaluate", **asdict(self)}


@dataclass
class Problem:
    """Everything the methods share: data on device, rewards, ground truth, reference points."""

    family: object
    x: jax.Array                 # (n, dx) normalised (s, a)
    xn: jax.Array                # (n, dx) normalised (s', pi(s'))
    done: jax.Array              # (n,)
    x_mean: np.ndarray
    x_std: np.ndarray
    ref_idx: np.ndarray          # (m,)
    fit_idx: np.ndarray          # (n_fit,)
    features: dict               # raw transition quantities (numpy)
    train_params: np.ndarray     # (R_tr,)
    test_params: np.ndarray      # (R_te,)
    r_train: jax.Array           # (R_tr, n) training rewards on the dataset
    r_test: jax.Array            # (R_te, n)
    y: jax.Array                 # (n_init, dx) normalised initial points
    q_train: jax.Array           # (R_tr, n_init) ground truth
    q_test: jax.Array            # (R_te, n_init)
    extra: dict = field(default_factory=dict)

    def subset(self, idx) -> dict:
        return {k: v[idx] for k, v in self.features.items()}


def prepare(cfg: EvaluateConfig) -> Problem:
    """Dataset, target policy, ground truth, rewards and reference points of an experiment."""
    family = get_family(cfg.family)
    actor = load_target_policy(family.name)
    data = load_transitions(family, cfg.dataset, cfg.data_seed, actor)
    gt = load_ground_truth(family, actor, cfg.n_initial, cfg.gamma, cfg.gt_tol, cfg.data_seed)
    key = jax.random.PRNGKey(cfg.seed)
    k_train, k_test = jax.random.split(key)
    train_params = np.asarray(family.sample(k_train, cfg.n_train_rewards, "train"))
    test_params = np.asarray(family.sample(k_test, cfg.n_test_rewards, "test"))
    features = {k: data[k] for k in family.feature_keys}
    x_raw = np.concatenate([data["obs"], data["action"]], -1)
    x_mean, x_std = x_raw.mean(0), x_raw.std(0)
    x_std = np.where(x_std < 1e-3, 1.0, x_std)   # (nearly) constant inputs, e.g. Ant's contact forces
    next_actions = np.concatenate([actor(c) for c in np.array_split(data["next_obs"], max(1, len(x_raw) // 50_000))])
    xn_raw = np.concatenate([data["next_obs"], next_actions], -1)
    feats_j = {k: jnp.asarray(v) for k, v in features.items()}
    n = len(x_raw)
    ref_idx = reference_indices(n, cfg.m, cfg.seed)
    fit_idx = np.sort(np.random.default_rng(cfg.seed + 1).choice(n, min(n, cfg.sf_fit_points), replace=False))
    norm = lambda z: jnp.asarray((z - x_mean) / x_std, jnp.float32)  # noqa: E731
    return Problem(
        family=family, x=norm(x_raw), xn=norm(xn_raw),
        done=jnp.asarray(data["terminated"], jnp.float32), x_mean=x_mean.astype(np.float32),
        x_std=x_std.astype(np.float32), ref_idx=ref_idx, fit_idx=fit_idx, features=features,
        train_params=train_params, test_params=test_params,
        r_train=family.rewards(train_params, feats_j), r_test=family.rewards(test_params, feats_j),
        y=norm(np.concatenate([gt.obs0, gt.action0], -1)),
        q_train=jnp.asarray(gt.q_family(family, train_params), jnp.float32),
        q_test=jnp.asarray(gt.q_family(family, test_params), jnp.float32))


def method_setup(method: str, cfg: EvaluateConfig, p: Problem):
    """(network, training data, train encodings, test encodings) of one method."""
    network = make_network(method, cfg.gamma, cfg.hidden, cfg.features, cfg.n_train_rewards)
    xi = p.x[p.ref_idx]                                               # (m, dx)
    if method == "sf":
        enc_train = identity_encodings(cfg.n_train_rewards)           # (d, d): psi itself
        basis = p.r_train[:, p.fit_idx]                               # (d, n_fit)
        enc_test = ridge_weights(basis, p.r_test[:, p.fit_idx], cfg.sf_ridge)   # (R_te, d)
    else:
        enc_train = p.r_train[:, p.ref_idx]                           # (R_tr, m)
        enc_test = p.r_test[:, p.ref_idx]                             # (R_te, m)
    data = OperatorData(x=p.x, xn=p.xn, rewards=p.r_train, done=p.done, xi=xi, enc=enc_train)
    return network, data, enc_train, enc_test


def inference_model(method: str, cfg: EvaluateConfig, p: Problem, params) -> OperatorModel:
    return OperatorModel(
        method=method, family=cfg.family, gamma=cfg.gamma,
        arch={"hidden": tuple(cfg.hidden), "features": cfg.features, "n_basis": cfg.n_train_rewards},
        params=params, xi_features=p.subset(p.ref_idx), x_mean=p.x_mean, x_std=p.x_std,
        fit_features=p.subset(p.fit_idx) if method == "sf" else None,
        basis=np.asarray(p.r_train[:, p.fit_idx]) if method == "sf" else None, ridge=cfg.sf_ridge)


def run_method(method: str, cfg: EvaluateConfig, p: Problem, run: RunDir, resume: bool) -> dict:
    """Train one method on all seeds; returns its entry of results.json."""
    network, data, enc_train, enc_test = method_setup(method, cfg, p)
    fqe = FQEConfig(gamma=cfg.gamma, lr=cfg.lr, tau=cfg.tau, batch_size=cfg.batch_size)
    seed_ids = np.arange(cfg.seed, cfg.seed + cfg.seeds)
    method_key = jax.random.fold_in(jax.random.PRNGKey(cfg.seed), METHODS.index(method) + 1)
    init_keys, keys = jax.vmap(lambda s: jax.random.split(jax.random.fold_in(method_key, s)))(seed_ids).transpose(1, 0, 2)
    state = make_initializer(network, fqe)(init_keys, data)
    ckpt = {"state": state, "keys": keys, "step": 0, "seconds": 0.0}
    if resume:
        ckpt = run.load_checkpoint(method, ckpt) or ckpt
        run.keep_metrics(lambda r: r.get("method") != method or r["step"] <= int(ckpt["step"]))
    state, keys, step, seconds = ckpt["state"], ckpt["keys"], int(ckpt["step"]), float(ckpt["seconds"])
    trainer = make_trainer(network, fqe, cfg.log_every)
    predict = make_predictor(network)

    def metrics(params):
        q_tr = predict(params, p.y, data.xi, enc_train)               # (S, n_init, R_tr)
        q_te = predict(params, p.y, data.xi, enc_test)                # (S, n_init, R_te)
        tr = jnp.mean((q_tr - p.q_train.T) ** 2, axis=(1, 2))         # (S,)
        te = jnp.mean((q_te - p.q_test.T) ** 2, axis=(1, 2))          # (S,)
        return np.asarray(tr), np.asarray(te)

    if step == 0:
        tr, te = metrics(state.params)
        run.append_metrics([{"method": method, "seed": int(s), "step": 0, "train_mse": float(a),
                             "test_mse": float(b), "loss": None, "seconds": 0.0}
                            for s, a, b in zip(seed_ids, tr, te)])
    bar = tqdm(total=cfg.steps, initial=step, desc=f"{method:>9}", unit="step", dynamic_ncols=True)
    while step < cfg.steps:
        t0 = time.perf_counter()
        split = jax.vmap(jax.random.split)(keys)                      # (S, 2, 2)
        keys, chunk_keys = split[:, 0], split[:, 1]
        state, loss = trainer(state, data, chunk_keys)
        tr, te = metrics(state.params)
        seconds += time.perf_counter() - t0
        step += cfg.log_every
        run.append_metrics([{"method": method, "seed": int(s), "step": step, "train_mse": float(a),
                             "test_mse": float(b), "loss": float(l), "seconds": round(seconds, 3)}
                            for s, a, b, l in zip(seed_ids, tr, te, np.asarray(loss))])
        bar.update(cfg.log_every)
        bar.set_postfix(train=f"{tr.mean():.3g}", test=f"{te.mean():.3g}")
        if step % cfg.checkpoint_every == 0 or step >= cfg.steps:
            run.save_checkpoint(method, {"state": state, "keys": keys, "step": step, "seconds": seconds})
    bar.close()
    inference_model(method, cfg, p, state.params).save(run.path / "models")
    tr, te = metrics(state.params)
    return {"train_mse": [float(v) for v in tr], "test_mse": [float(v) for v in te],
            "steps": step, "seconds": round(seconds, 2)}


def run_evaluate(cfg: EvaluateConfig, out: str | Path, resume: bool = False, plot: bool = True) -> dict:
    """Run (or resume) an experiment into ``out``; returns results.json's content."""
    run = RunDir(out)
    if resume:
        cfg = EvaluateConfig.from_dict(run.read_config())  # the run's own configuration wins
    elif run.config_path.exists():
        raise FileExistsError(f"{run.path} already holds a run; pass --resume to continue it "
                              f"or choose another --out")
    p = prepare(cfg)
    run.write_json("config.json", cfg.to_dict())
    results = {"family": cfg.family, "dataset": cfg.dataset, "task": "evaluate", "methods": {}}
    if resume and (run.path / "results.json").is_file():
        results["methods"].update(json.loads((run.path / "results.json").read_text()).get("methods", {}))
    for method in cfg.methods:
        if resume and method in results["methods"] and results["methods"][method]["steps"] >= cfg.steps:
            continue
        results["methods"][method] = run_method(method, cfg, p, run, resume)
        run.write_json("results.json", results)
    run.write_json("results.json", results)
    if plot:
        from resolvent.experiments.plots import plot_mse
        plot_mse(run.path)
    return results


__all__ = ["KINDS", "METHODS", "EvaluateConfig", "run_evaluate", "prepare"]
