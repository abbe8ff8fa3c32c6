"""The method factory of an evaluate run: ``make_method`` builds one method's network, training
data, trainer and predictor (operators encoding rewards at reference points, SF's basis, the
policy-encoded networks, the per-reward FQE oracle); ``inference_model`` the model it saves."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms import (FQEConfig, OperatorData, identity_encodings, make_initializer,
                                  make_predictor, make_trainer, ridge_weights)
from resolvent.algorithms.fqe import init as fqe_init
from resolvent.algorithms.fqe import dope, train_chunk
from resolvent.algorithms import fb, policy_fqe
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.policy_refs import first_step_values
from resolvent.experiments.problem import SETS, Problem
from resolvent.keys import name_id, named_key
from resolvent.model import Arch, OperatorModel
from resolvent.operators import NETWORKS, make_network
from resolvent.rewards import generic_rewards, reward_inputs

@dataclass
class Method:
    """One method's network, training data, trainer and how it encodes each reward set."""

    name: str
    network: object
    data: OperatorData
    init: Callable               # (keys, data) -> states
    train: Callable              # (states, data, keys) -> (states, loss)
    predict: Callable            # (params) -> {set: (S, R, n_init)} for the sets it answers
    basis: np.ndarray | None = None  # SF: basis values on the fit points (d, n_fit)


def sf_basis(cfg: EvaluateConfig, p: Problem) -> jax.Array:
    """SF's basis on the dataset (d, n): the family's training rewards under a family prior;
    with a generic prior also ``sf_generic_basis`` fixed generic draws (only the generic ones
    under ``generic``)."""
    parts = [p.r_train] if cfg.prior.family else []
    if cfg.prior.generic:
        gen = generic_rewards(cfg.prior, named_key(cfg.seed, "sf-basis"), p.prior_stats, p.z_raw,
                              cfg.sf_generic_basis)
        feats = {k: jnp.asarray(v) for k, v in p.features.items()}
        parts.append(jnp.stack([g(feats) for g in gen]))
    return jnp.concatenate(parts, 0)


def run_fqe(cfg: EvaluateConfig) -> FQEConfig:
    """The run's FQE configuration, its learning-rate schedule spanning the run's steps."""
    return dataclasses.replace(cfg.fqe, decay_steps=cfg.steps)


def make_method(name: str, cfg: EvaluateConfig, p: Problem) -> Method:
    """Network, data and trainer of one method."""
    fqe = run_fqe(cfg)
    xi = p.xi                                                              # (m, dx)
    if name == "fqe":
        return fqe_oracle(cfg, p, xi)
    if NETWORKS[name].encoding == "policy":
        return policy_method(name, cfg, p)
    if name == "sf":
        basis = sf_basis(cfg, p)                                           # (d, n)
        network = make_network(name, cfg.gamma, cfg.hidden, cfg.features, basis.shape[0])
        data = OperatorData(x=p.x, xn=p.xn, rewards=basis, done=p.done, xi=xi,
                            enc=identity_encodings(basis.shape[0]))
        fqe = dataclasses.replace(fqe, prior=None)                         # the basis is fixed
        fit_basis = basis[:, p.fit_idx]                                    # (d, n_fit)
        enc = {s: ridge_weights(fit_basis, p.sets[s].fit_values, cfg.sf_ridge) for s in SETS}
    else:
        network = make_network(name, cfg.gamma, cfg.hidden, cfg.features, 1, absorbing=p.absorbing)
        keep = slice(None) if cfg.prior.family else slice(0)
        z_xi = reward_inputs(p.xi_features, p.extras)
        data = OperatorData(x=p.x, xn=p.xn, rewards=p.r_train[keep], done=p.done, xi=xi,
                            enc=p.sets["train"].xi_values[keep], prior=p.prior_stats.data(p.z_raw, z_xi))
        enc = {s: p.sets[s].xi_values for s in SETS}
        fit_basis = None
    predictor = make_predictor(network)

    def predict(params):
        if p.y is None:
            return {}
        return {s: jnp.swapaxes(predictor(params, p.y, xi, enc[s]), 1, 2) for s in SETS if len(p.sets[s])}

    return Method(name, network, data, make_initializer(network, fqe),
                  make_trainer(network, fqe, cfg.log_every), predict,
                  None if fit_basis is None else np.asarray(fit_basis))


def policy_method(name: str, cfg: EvaluateConfig, p: Problem) -> Method:
    """A method of the ``policy`` encoding: G[r] = r + gamma U[r], U trained by ``policy_fqe``
    (favor, pi-attention) or ``fb``, scored with rewards encoded over the reference pool."""
    refs = p.pi
    network = make_network(name, cfg.gamma, cfg.hidden, cfg.features, 1, absorbing=p.absorbing,
                           random_features=cfg.random_features, kernel_heads=cfg.kernel_heads)
    fqe = run_fqe(cfg)
    keep = slice(None) if cfg.prior.family else slice(0)
    r_train = refs.values["train"][keep]                                   # (R, n) pi-scored
    data = OperatorData(x=p.x, xn=p.xn, rewards=r_train, done=p.done, xi=p.xn[:cfg.n_refs],
                        enc=r_train[:, :cfg.n_refs], prior=p.prior_stats.data(refs.z, refs.z[:1]))
    if name == "fb":
        loss_fn = fb.make_loss(cfg.fb_ortho)
        fqe = dataclasses.replace(fqe, prior=None)                         # FB trains on no reward
    else:
        loss_fn = policy_fqe.make_loss(cfg.n_refs)
    predictor = make_predictor(network)
    at = refs.pool_for(kernel=name != "fb")                               # (N,) positions in the pool
    pool_x = p.xn[refs.pool[at]]                                           # (N, dx)
    first = {}
    if p.y is not None:
        obs, act = p.raw_points()
        first = {s: first_step_values(refs.model, p.source.rewards[s], obs, act, "evaluation points")
                 for s in SETS}                                            # (R, n_all)
    pool_values = {s: refs.values[s][:, refs.pool[at]] if s == "train" else refs.values[s][:, at] for s in SETS}

    def predict(params):
        if p.y is None:
            return {}
        return {s: first[s][None] + cfg.gamma * jnp.swapaxes(predictor(params, p.y, pool_x, pool_values[s]), 1, 2)
                for s in SETS if len(p.sets[s])}                           # (S, R, n_all)

    return Method(name, network, data, make_initializer(network, fqe),
                  make_trainer(network, fqe, cfg.log_every, loss_fn), predict)


def fqe_oracle(cfg: EvaluateConfig, p: Problem, xi, answers: str | None = None) -> Method:
    """Plain FQE, one Q network per test reward (a dataset of one's own: per training reward;
    or the set ``answers``), vmapped over rewards, then seeds."""
    network = make_network("fqe", cfg.gamma, cfg.hidden, cfg.features, 1)
    fqe = dataclasses.replace(run_fqe(cfg), prior=None)
    if cfg.oracle == "dope":
        fqe, network = dope(fqe), network.clone(out_scale=1.0 / (1.0 - cfg.gamma))
    answers = answers or oracle_set(cfg, p)
    r = p.sets[answers].values                                             # (R, n)
    scale = jnp.mean(r, axis=1) / (1.0 - cfg.gamma)                        # (R,)
    data = OperatorData(x=p.x, xn=p.xn, rewards=r[:, None, :], done=p.done, xi=xi,
                        enc=scale[:, None, None])                          # (R, 1, n) (R, 1, 1)
    axes = OperatorData(x=None, xn=None, rewards=0, done=None, xi=None, enc=0)
    names = jnp.asarray([name_id(n) for n in p.sets[answers].names])      # (R,)

    def one(state, d, key, name):
        return train_chunk(state, d, jax.random.fold_in(key, name), cfg.log_every, network, fqe)

    def init_one(key, d, name):
        return fqe_init(network, fqe, jax.random.fold_in(key, name), d)

    init = jax.jit(lambda keys, d: jax.vmap(jax.vmap(init_one, in_axes=(0, None, None)),
                                            in_axes=(None, axes, 0))(keys, d, names))
    train = jax.jit(lambda states, d, keys: jax.vmap(jax.vmap(one, in_axes=(0, None, 0, None)),
                                                     in_axes=(0, axes, None, 0))(states, d, keys, names))
    apply = jax.jit(jax.vmap(jax.vmap(network.apply, in_axes=(0, None, None, None)),
                             in_axes=(0, None, None, 0)))

    def predict(params):                                                   # params (R, S, ...)
        if p.y is None:
            return {}
        q = apply(params, p.y, xi, data.enc)[..., 0]                       # (R, S, n_init)
        return {answers: jnp.swapaxes(q, 0, 1)}                            # (S, R, n_init)

    return Method("fqe", network, data, init, train, predict)


def oracle_set(cfg: EvaluateConfig, p: Problem) -> str:
    """The rewards the FQE oracle is trained on: ``cfg.oracle_rewards``; for test, the training
    rewards when there are no test ones."""
    if cfg.oracle_rewards == "probe":
        if not len(p.sets["probe"]):
            raise ValueError("oracle_rewards probe: this run has no probe rewards (a family's, or --probes FILE)")
        return "probe"
    return "test" if len(p.sets["test"]) else "train"



def inference_model(name: str, cfg: EvaluateConfig, p: Problem, method: Method, params) -> OperatorModel:
    n_basis = method.basis.shape[0] if method.basis is not None else cfg.n_train_rewards
    policy = NETWORKS[name].encoding == "policy"
    return OperatorModel(
        method=name, family=cfg.family or p.source.name, gamma=cfg.gamma,
        arch=Arch(hidden=tuple(cfg.hidden), features=cfg.features, n_basis=n_basis,
                  absorbing=p.absorbing and name in ("attention", "favor", "pi-attention"),
                  random_features=cfg.random_features, kernel_heads=cfg.kernel_heads),
        params=params, xi_features=p.pi.pool_features(kernel=name != "fb") if policy else p.xi_features,
        x_mean=p.x_mean, x_std=p.x_std,
        onestep=p.pi.model if policy else None,
        fit_features=p.subset(p.fit_idx) if name == "sf" else None,
        basis=method.basis, ridge=cfg.sf_ridge)

