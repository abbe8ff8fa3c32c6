"""Operator BCQ: batch-constrained Q-learning (Fujimoto et al. 2019) with operator networks.

The paper's appendix ("Modified Operator BCQ"): the actor is BCQ's state-conditional VAE
``g_w(s)`` (an imitation model of the data's actions, reward-free) plus a perturbation network
that is itself an operator network, ``zeta[r](s, a)``, a vanilla (DeepONet) operator with a
vector output; the action for a reward r is

    a = clip(g_w(s) + phi tanh(zeta[r](s, g_w(s))), -1, 1)     (actions scaled to [-1, 1])

The critic is BCQ's clipped double Q with two operator networks (max-out or vanilla),
``G_1[r]``, ``G_2[r]``; for a transition (s, a, s') and a reward r,

    y = r(s, a) + gamma (1 - terminated) max_{j <= n} [lam min_i + (1 - lam) max_i] G'_i[r](s', a_j)
    a_j = clip(g_w(s') + phi tanh(zeta'[r](s', g_w(s'))))  (n samples of the VAE; ' = target)
    L_critic = sum_i mean (G_i[r](s, a) - y)^2
    L_actor  = -mean G_1[r](s, a~),  a~ from zeta[r] on a VAE sample at s
    L_vae    = mean ||a - decoder(s, z)||^2 + 1/2 KL(N(mu, sigma) || N(0, I))

Each transition of a batch gets its own reward, drawn uniformly from the R training rewards
(Algorithm 1 samples one reward per step; one per transition is the same estimator with
more rewards per batch), so a step costs what one BCQ step costs: the networks run in
"paired" mode, row i with reward i. At evaluation BCQ samples ``eval_samples`` VAE actions,
perturbs them and takes the one the first critic values most.

Hyper-parameters: the paper's Adam lr 1e-3, tau 0.005, batch 256; BCQ's where the paper is
silent: phi = 0.05, lam = 0.75, n = 10 target samples, 100 samples at action selection, VAE
750-750 with latent dimension 2 da (log-std clipped to [-4, 15], latent clipped to [-0.5,
0.5] when sampling from the prior), KL weight 1/2, perturbation hidden layers 400-300.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from resolvent.config import TDConfig
from resolvent.operators import MLP


@dataclass(frozen=True)
class BCQConfig(TDConfig):
    """Hyper-parameters of operator BCQ (the paper's, else BCQ's published ones): the TD ones
    (gamma; lr of the VAE, actor and critics; tau of the target actor and critics; batch_size,
    the paper's 256 where BCQ used 100), and these."""

    phi: float = 0.05             # largest perturbation, a fraction of the action bound (BCQ)
    lmbda: float = 0.75           # weight of the min in the clipped double-Q target (BCQ)
    n_samples: int = 10           # VAE actions per next state in the target (BCQ)
    eval_samples: int = 100       # VAE actions per state at action selection (BCQ)


class VAE(nn.Module):
    """BCQ's state-conditional VAE over actions in [-1, 1] (encoder and decoder 750-750)."""

    action_dim: int
    latent_dim: int
    hidden: Sequence[int] = (750, 750)

    def setup(self):
        self.encoder = MLP(self.hidden, 2 * self.latent_dim)
        self.decoder = MLP(self.hidden, self.action_dim)

    def __call__(self, s, a, key):
        h = self.encoder(jnp.concatenate([s, a], -1))                        # (b, 2 L)
        mean, log_std = jnp.split(h, 2, axis=-1)                              # (b, L) (b, L)
        std = jnp.exp(jnp.clip(log_std, -4.0, 15.0))
        z = mean + std * jax.random.normal(key, mean.shape)                   # (b, L)
        return self.decode(s, key, z), mean, std

    def decode(self, s, key, z=None):
        """Actions (b, da) in [-1, 1]; z from the clipped prior when not given."""
        if z is None:
            z = jnp.clip(jax.random.normal(key, (s.shape[0], self.latent_dim)), -0.5, 0.5)
        return jnp.tanh(self.decoder(jnp.concatenate([s, z], -1)))


class PerturbationOperator(nn.Module):
    """zeta[r](s, a): a vanilla operator (DeepONet) with one output per action dimension,

        zeta[r](s, a)_d = sum_f phi_f(r(xi_1..xi_m)) psi_{d f}(s, a) + b_d,

    row i of (s, a) with reward ``rows[i]`` of ``enc`` (R, m): the branch runs once per
    distinct reward, not once per row. Returns the perturbed action in [-1, 1].
    """

    action_dim: int
    phi: float                    # largest perturbation, a fraction of the bound (BCQConfig.phi)
    hidden: Sequence[int] = (400, 300)
    features: int = 64

    @nn.compact
    def __call__(self, s, a, enc, rows):
        d, f = self.action_dim, self.features
        branch = MLP(self.hidden, f, name="branch")(enc)[rows]                    # (b, F)
        trunk = MLP(self.hidden, d * f, name="trunk")(jnp.concatenate([s, a], -1))
        trunk = trunk.reshape(s.shape[0], d, f)                                   # (b, da, F)
        bias = self.param("bias", nn.initializers.zeros, (d,))
        zeta = jnp.einsum("bdf,bf->bd", trunk, branch) + bias                     # (b, da)
        return jnp.clip(a + self.phi * jnp.tanh(zeta), -1.0, 1.0)


class Nets(NamedTuple):
    """The three networks of operator BCQ (static: hashable flax modules)."""

    vae: VAE
    actor: PerturbationOperator
    critic: nn.Module            # an operator network with a paired mode (max-out, vanilla)


class BCQData(NamedTuple):
    """The offline data operator BCQ trains on, already on device."""

    s: jax.Array         # (n, ds) normalised states
    a: jax.Array         # (n, da) actions scaled to [-1, 1]
    next_s: jax.Array    # (n, ds) normalised next states
    rewards: jax.Array   # (R, n) training rewards' values on every transition
    done: jax.Array      # (n,) 1.0 where the transition terminated
    xi: jax.Array        # (m, dx) normalised reference points (s, a)
    enc: jax.Array       # (R, m) the training rewards at the reference points
    a_shift: jax.Array   # (da,) critic input: a_norm = a * a_scale + a_shift, from [-1, 1]
    a_scale: jax.Array   # (da,)


class BCQState(NamedTuple):
    vae: Any
    actor: Any
    critic: Any                  # twin critics: leading axis of size 2
    actor_target: Any
    critic_target: Any
    opt: Any                     # (vae, actor, critic) Adam states
    step: jax.Array


def critic_input(data: BCQData, s: jax.Array, a: jax.Array) -> jax.Array:
    """The critic's normalised (s, a) from a normalised state and an action in [-1, 1]."""
    return jnp.concatenate([s, a * data.a_scale + data.a_shift], -1)         # (b, dx)


def twin_q(critic: nn.Module, params, x, xi, enc) -> jax.Array:
    """Both critics, row i with reward i: (2, b)."""
    return jax.vmap(lambda p: critic.apply(p, x, xi, enc, paired=True))(params)


def init(nets: Nets, config: BCQConfig, key: jax.Array, data: BCQData) -> BCQState:
    k_vae, k_actor, k_critic, k_z = jax.random.split(key, 4)
    s, a, enc = data.s[:1], data.a[:1], data.enc[:1]
    vae = nets.vae.init(k_vae, s, a, k_z)
    actor = nets.actor.init(k_actor, s, a, enc, jnp.zeros(1, jnp.int32))
    x = critic_input(data, s, a)
    critic = jax.vmap(lambda k: nets.critic.init(k, x, data.xi, enc, paired=True))(
        jax.random.split(k_critic))
    adam = optax.adam(config.lr)
    opt = (adam.init(vae), adam.init(actor), adam.init(critic))
    return BCQState(vae, actor, critic, actor, critic, opt, jnp.zeros((), jnp.int32))


def vae_loss(vae_params, nets: Nets, s, a, key) -> jax.Array:
    recon, mean, std = nets.vae.apply(vae_params, s, a, key)
    kl = -0.5 * jnp.mean(1.0 + jnp.log(std**2) - mean**2 - std**2)
    return jnp.mean((recon - a) ** 2) + 0.5 * kl


def critic_target(state: BCQState, vae_params, nets: Nets, config: BCQConfig, data: BCQData,
                  s2, ridx, key) -> jax.Array:
    """max over n VAE samples of the clipped double-Q value at s' (b,), row i for reward ridx[i]."""
    b, n = s2.shape[0], config.n_samples
    s2r, rr = jnp.repeat(s2, n, axis=0), jnp.repeat(ridx, n)              # (b n, ds) (b n,)
    encr = data.enc[rr]                                                    # (b n, m)
    a2 = nets.vae.apply(vae_params, s2r, key, method=VAE.decode)           # (b n, da)
    a2 = nets.actor.apply(state.actor_target, s2r, a2, data.enc, rr)       # (b n, da)
    q = twin_q(nets.critic, state.critic_target, critic_input(data, s2r, a2), data.xi, encr)
    q = config.lmbda * q.min(0) + (1.0 - config.lmbda) * q.max(0)          # (b n,)
    return q.reshape(b, n).max(axis=1)                                     # (b,)


def critic_loss(critic_params, nets: Nets, data: BCQData, x, enc, y) -> jax.Array:
    q = twin_q(nets.critic, critic_params, x, data.xi, enc)               # (2, b)
    return jnp.sum(jnp.mean((q - y[None]) ** 2, axis=1))


def actor_loss(actor_params, critic_params, vae_params, nets: Nets, data: BCQData, s, ridx,
               key) -> jax.Array:
    a = nets.vae.apply(vae_params, s, key, method=VAE.decode)              # (b, da)
    a = nets.actor.apply(actor_params, s, a, data.enc, ridx)               # (b, da)
    q1 = nets.critic.apply(jax.tree_util.tree_map(lambda p: p[0], critic_params),
                           critic_input(data, s, a), data.xi, data.enc[ridx], paired=True)  # (b,)
    return -jnp.mean(q1)


def update(state: BCQState, data: BCQData, key: jax.Array, nets: Nets,
           config: BCQConfig) -> tuple[BCQState, jax.Array]:
    """One BCQ step (VAE, critics, actor, Polyak targets); returns the critic loss."""
    k_idx, k_rew, k_vae, k_next, k_actor = jax.random.split(key, 5)
    n, n_rewards = data.s.shape[0], data.enc.shape[0]
    idx = jax.random.randint(k_idx, (config.batch_size,), 0, n)            # (b,)
    ridx = jax.random.randint(k_rew, (config.batch_size,), 0, n_rewards)   # (b,) one reward each
    s, a, s2 = data.s[idx], data.a[idx], data.next_s[idx]                  # (b, ds) (b, da) (b, ds)
    enc, r = data.enc[ridx], data.rewards[ridx, idx]                       # (b, m) (b,)
    adam = optax.adam(config.lr)
    opt_vae, opt_actor, opt_critic = state.opt

    grads = jax.grad(vae_loss)(state.vae, nets, s, a, k_vae)
    upd, opt_vae = adam.update(grads, opt_vae, state.vae)
    vae = optax.apply_updates(state.vae, upd)

    q_next = critic_target(state, vae, nets, config, data, s2, ridx, k_next)
    y = jax.lax.stop_gradient(r + config.gamma * (1.0 - data.done[idx]) * q_next)   # (b,)
    value, grads = jax.value_and_grad(critic_loss)(state.critic, nets, data,
                                                   critic_input(data, s, a), enc, y)
    upd, opt_critic = adam.update(grads, opt_critic, state.critic)
    critic = optax.apply_updates(state.critic, upd)

    grads = jax.grad(actor_loss)(state.actor, critic, vae, nets, data, s, ridx, k_actor)
    upd, opt_actor = adam.update(grads, opt_actor, state.actor)
    actor = optax.apply_updates(state.actor, upd)

    return BCQState(vae, actor, critic,
                    optax.incremental_update(actor, state.actor_target, config.tau),
                    optax.incremental_update(critic, state.critic_target, config.tau),
                    (opt_vae, opt_actor, opt_critic), state.step + 1), value


def train_chunk(state: BCQState, data: BCQData, key: jax.Array, n_steps: int, nets: Nets,
                config: BCQConfig) -> tuple[BCQState, jax.Array]:
    """``n_steps`` updates with ``lax.scan``; returns the new state and the mean critic loss."""
    state, losses = jax.lax.scan(lambda st, k: update(st, data, k, nets, config), state,
                                 jax.random.split(key, n_steps))
    return state, losses.mean()


def make_trainer(nets: Nets, config: BCQConfig, n_steps: int):
    """``train(states, data, keys)`` jitted and vmapped over seeds (leading axis)."""
    return jax.jit(jax.vmap(lambda st, d, k: train_chunk(st, d, k, n_steps, nets, config),
                            in_axes=(0, None, 0)))


def make_initializer(nets: Nets, config: BCQConfig):
    """``init(keys, data)`` vmapped over seeds."""
    return jax.jit(jax.vmap(lambda k, d: init(nets, config, k, d), in_axes=(0, None)))


def policy_params(state: BCQState) -> dict:
    """What acting needs: the VAE, the actor and the twin critics."""
    return {"vae": state.vae, "actor": state.actor, "critic": state.critic}


def select_actions(nets: Nets, params: dict, s: jax.Array, xi: jax.Array, enc_rows: jax.Array,
                   key: jax.Array, n_samples: int, a_shift, a_scale) -> jax.Array:
    """BCQ's action selection, state i for reward i: actions (N, da) in [-1, 1].

    ``n_samples`` VAE actions per state, perturbed by zeta[r], the one with the largest G_1[r].
    """
    n = s.shape[0]
    rows = jnp.repeat(jnp.arange(n), n_samples)                                # (N k,)
    sr, encr = s[rows], enc_rows[rows]                                         # (N k, ds) (N k, m)
    a = nets.vae.apply(params["vae"], sr, key, method=VAE.decode)              # (N k, da)
    a = nets.actor.apply(params["actor"], sr, a, enc_rows, rows)               # (N k, da)
    x = jnp.concatenate([sr, a * a_scale + a_shift], -1)                       # (N k, dx)
    q1 = nets.critic.apply(jax.tree_util.tree_map(lambda p: p[0], params["critic"]), x, xi,
                           encr, paired=True)                                  # (N k,)
    best = jnp.argmax(q1.reshape(n, n_samples), axis=1)                        # (N,)
    return a.reshape(n, n_samples, -1)[jnp.arange(n), best]                    # (N, da)


def make_act(nets: Nets, n_samples: int, low, high, a_mean, a_std):
    """``act(params, s, xi, enc_rows, key) -> (N, da)`` raw actions within [low, high]."""
    low, high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
    a_shift, a_scale = action_affine(low, high, a_mean, a_std)

    def act(params, s, xi, enc_rows, key):
        a = select_actions(nets, params, s, xi, enc_rows, key, n_samples, a_shift, a_scale)
        return low + (a + 1.0) * (high - low) / 2.0                            # (N, da)

    return act


def make_nets(critic: nn.Module, action_dim: int, config: BCQConfig,
              vae_hidden: Sequence[int] = (750, 750), actor_hidden: Sequence[int] = (400, 300),
              features: int = 64) -> Nets:
    """BCQ's VAE (latent 2 da) and perturbation operator around a critic operator network."""
    return Nets(VAE(action_dim, 2 * action_dim, tuple(vae_hidden)),
                PerturbationOperator(action_dim, config.phi, tuple(actor_hidden), features),
                critic)


def action_affine(low, high, a_mean, a_std):
    """(a_shift, a_scale): a in [-1, 1] to the critic's normalised action."""
    low, high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
    half = (high - low) / 2.0
    return (low + half - jnp.asarray(a_mean)) / jnp.asarray(a_std), half / jnp.asarray(a_std)
