"""``OperatorModel``: a trained operator for inference, apart from the trainer.

Given ANY reward, as a callable over the stored transition quantities (a dict with ``obs``,
``action``, ``next_obs`` and the family's extras, one row per transition) returning one value
per transition, the model returns the target policy's Q-values with no training:

    model = resolvent.load(run_dir, method="attention")
    q = model.q_values(lambda f: jnp.cos(jnp.arctan2(f["obs"][:, 1], f["obs"][:, 0])), obs, act)

The reward is evaluated at the m reference points (operator networks) or, for successor
features, on the fit points whose ridge regression gives its weights.

A control model (``resolvent optimize``: operator DQN or operator BCQ) also acts: its
``policy(reward)`` is the zero-shot policy of any reward, ``action = policy(observation)``,
greedy over the action grid (DQN) or BCQ's sampled-and-perturbed actions (BCQ); its
``q_values`` are the optimal Q-values G_*[r] (BCQ: the first critic).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms import bcq, dqn
from resolvent.algorithms import onestep as onestep_model
from resolvent.algorithms.bank import Bank, BankConfig
from resolvent.algorithms.expansion import Dynamics, Expansion, Rollouts, Until, expand, expanded_q
from resolvent.algorithms.horizon import Stretches, choose, model_errors, point_spread, validate
from resolvent.algorithms.sf import ridge_weights
from resolvent.blocks import in_blocks
from resolvent.config import from_dict
from resolvent.data.user import load_object
from resolvent.evaluation.support import ActionSupport, SupportCheck
from resolvent.families import get_family
from resolvent.io import atomic_savez, atomic_write_bytes
from resolvent.operators import NETWORKS, KernelOperator, MaxOutOperator, make_network, widen_heads
from resolvent.paths import compile_cache
from resolvent.policies.actor import load_target_policy
from resolvent.rewards.probes import evaluate_reward, reads

Reward = Callable[[dict], jax.Array]
AUTO = "auto"   # the expansion horizon chosen per reward (``METHOD+kauto``)
MEAN = "~"      # "favor+kauto~fb+kauto": the mean of these answers of one run (``MeanModel``)


class CheckpointError(RuntimeError):
    """A saved model or checkpoint that cannot be read."""


def _typed(cls, d: dict, what: str):
    """``config.from_dict``, its error (an unknown key, say) a CheckpointError."""
    try:
        return from_dict(cls, d, what)
    except ValueError as e:
        raise CheckpointError(f"a saved model's {what} does not load: {e}") from None


@dataclass(frozen=True)
class Arch:
    """The sizes a saved model's network is rebuilt with."""

    hidden: tuple[int, ...]             # hidden layers of every MLP
    features: int                       # output features of f, g (per max-out copy), DeepONet
    n_basis: int = 0                    # successor features: basis size
    heads: int = MaxOutOperator.heads   # max-out copies K
    absorbing: bool = False             # attention, favor, pi-attention: the absorbing-state slot
    random_features: int = 256          # favor: positive random features M
    kernel_heads: int = 4               # favor, pi-attention: kernels in the occupancy's mixture
    vae_hidden: tuple[int, ...] = ()    # BCQ: VAE hidden layers
    actor_hidden: tuple[int, ...] = ()  # BCQ: perturbation actor hidden layers

    @classmethod
    def from_dict(cls, d: dict) -> "Arch":
        return _typed(cls, d, "architecture")


@dataclass(frozen=True)
class Control:
    """How a control model acts: its algorithm, action bounds and acting settings."""

    algorithm: str                                # dqn or bcq
    low: tuple[float, ...]                        # action bounds
    high: tuple[float, ...]
    grid: tuple[tuple[float, ...], ...] = ()      # DQN: the action grid (A, da)
    phi: float = bcq.BCQConfig.phi                # BCQ: largest perturbation (fraction of the bound)
    eval_samples: int = bcq.BCQConfig.eval_samples  # BCQ: VAE samples per state when acting

    @classmethod
    def from_dict(cls, d: dict) -> "Control":
        return _typed(cls, d, "control settings")

    def make_act(self, network, arch: Arch, x_mean, x_std):
        """``act(params, s, xi, enc_rows, key) -> (N, da)`` raw actions, one seed's params: the
        algorithm's own acting code (``dqn.make_act``, ``bcq.make_act``)."""
        ds = len(x_mean) - len(self.low)
        if self.algorithm == "dqn":
            grid = np.asarray(self.grid, np.float32)
            return dqn.make_act(network, grid, (grid - x_mean[ds:]) / x_std[ds:])
        nets = bcq.make_nets(network, len(self.low), bcq.BCQConfig(phi=self.phi), arch.vae_hidden,
                             arch.actor_hidden, arch.features)
        return bcq.make_act(nets, self.eval_samples, np.asarray(self.low, np.float32),
                            np.asarray(self.high, np.float32), x_mean[ds:], x_std[ds:])


@dataclass
class OperatorModel:
    """A trained operator ``G[r](s, a)`` (all seeds) with what it needs to encode rewards."""

    method: str
    family: str
    gamma: float
    arch: Arch                  # network sizes
    params: dict                # network parameters, leading axis = seed
    xi_features: dict           # raw transition quantities at the m reference points
    x_mean: np.ndarray          # (dx,) input normalisation
    x_std: np.ndarray           # (dx,)
    fit_features: dict | None = None   # SF: transition quantities at the fit points
    basis: np.ndarray | None = None    # SF: (d, n_fit) training rewards on the fit points
    ridge: float = 1e-3
    control: Control | None = None     # control models: how they act
    onestep: onestep_model.OneStepModel | None = None  # policy encoding: the one-step model of the data
    target_policy: Callable | None = None  # pi, observations (n, ds) -> actions (n, da): the expansion's
    #                                        actor (not saved: ``load`` attaches the run's own)
    horizon: int | str = 0              # q_values' default expansion horizon k (``load(run, "favor+k30")``),
    #                                     or "auto": chosen per reward (``choose_horizon``)
    horizons: tuple[int, ...] = ()      # "auto"'s candidates besides 0 (the run's horizons)
    stretches: Stretches | None = None  # "auto": the data's stretches that check a one-step model of one member
    peers: tuple = ()                   # "auto": other operators of the same data (their spread is e_op)
    #                                     (these three are not saved with the model: ``load`` attaches the run's)
    bank: Bank | None = None            # the data's bank: the expansion's tail where set (``METHOD+bK+kk``;
    #                                     ``load`` gives the run's, rolled out when first asked), and with
    #                                     ``reach`` where each point's rollout stops
    support: ActionSupport | None = None  # the data's action-support check (``check_support``; ``load`` gives
    #                                     the run's, None for a run made before it)

    def __post_init__(self):
        self.network = make_network(self.method, self.gamma, self.arch.hidden, self.arch.features,
                                    self.arch.n_basis, self.arch.heads, self.arch.absorbing,
                                    self.arch.random_features, self.arch.kernel_heads)
        self.scored_under_policy = NETWORKS[self.method].encoding == "policy"
        self._check_params()
        self.rollouts = Rollouts()       # the longest rollout asked for at the last points (shareable)
        self._validation: tuple | None = None   # (tag of the one-step model, policy, stretches; its rollout along them)
        self._steer: tuple | None = None        # (the check, the policy, the points' tag; ``dynamics``' mask there)
        # every seed's answers (S, b, R) at the points x (b, dx), in blocks of the points (``resolvent.blocks``)
        self._apply = jax.jit(in_blocks(jax.vmap(self.network.apply, in_axes=(0, None, None, None)), arg=1, out_axis=1))
        if self.scored_under_policy:   # keys of the reference pool, computed once per seed
            net = self.network
            keys = jax.vmap(lambda p, xi: net.apply(p, xi, method=lambda m, v: m.keys(v)), in_axes=(0, None))
            self._keys = keys(self.params, self.xi)                           # (S, N, M)
            self._summary = jax.jit(jax.vmap(lambda p, k, e: net.apply(p, k, e, method=lambda m, a, b: m.summary(a, b)),
                                             in_axes=(0, 0, None)))
            answer = jax.vmap(lambda p, x, sm: net.apply(p, x, sm, method=lambda m, a, b: m.answer(a, b)),
                              in_axes=(0, None, 0))
            self._answer = jax.jit(in_blocks(answer, arg=1, out_axis=1))
        if self.control is not None:
            self._act = jax.jit(self.control.make_act(self.network, self.arch, self.x_mean, self.x_std))

    def _check_params(self) -> None:
        """The parameters must be this network's (one per seed): else a clear CheckpointError."""
        if self.control is not None:   # control models hold several networks; checked on use
            return
        width = self.arch.n_basis if self.method == "sf" else self.xi_features["obs"].shape[0]
        x, enc = jnp.zeros((1, len(self.x_mean))), jnp.zeros((1, width))

        def shapes(tree, skip: int) -> dict:
            flat = jax.tree_util.tree_flatten_with_path(tree)[0]
            return {jax.tree_util.keystr(path): tuple(np.shape(leaf))[skip:] for path, leaf in flat}

        try:
            want = shapes(jax.eval_shape(lambda: self.network.init(jax.random.PRNGKey(0), x, self.xi, enc)), 0)
            ok = want == shapes(self.params, 1)
        except Exception:  # noqa: BLE001 - parameters of another structure entirely
            ok = False
        if not ok:
            raise CheckpointError(f"the saved {self.method!r} parameters do not fit a {self.method} "
                                  f"network with {self.arch}: they belong to another model; retrain it")

    @property
    def critic_params(self):
        """The parameters of G (all seeds): BCQ's first critic for a BCQ model."""
        if self.control is not None and self.control.algorithm == "bcq":
            return jax.tree_util.tree_map(lambda p: p[:, 0], self.params["critic"])
        return self.params

    def policy(self, reward: Reward, seed: int = 0, key: int = 0) -> "Policy":
        """The zero-shot policy of ``reward`` (a callable as in ``q_values``), network ``seed``."""
        if self.control is None:
            raise ValueError(f"the {self.method!r} model evaluates a fixed target policy and has no "
                             f"policy of its own; train a control model with `resolvent optimize`")
        self._check_seed(seed)
        params = jax.tree_util.tree_map(lambda p: jnp.asarray(p[seed]), self.params)
        ds = self.xi_features["obs"].shape[1]
        return Policy(self._act, params, self.xi, self.encode([reward])[0],
                      self.x_mean[:ds], self.x_std[:ds], jax.random.PRNGKey(key))

    def _check_seed(self, seed: int) -> None:
        if not 0 <= seed < self.n_seeds:
            raise ValueError(f"seed index {seed} out of range: this model has {self.n_seeds} seeds")

    @property
    def n_seeds(self) -> int:
        return int(jax.tree_util.tree_leaves(self.critic_params)[0].shape[0])

    def normalise(self, obs, actions) -> jax.Array:
        x = jnp.concatenate([jnp.asarray(obs, jnp.float32), jnp.asarray(actions, jnp.float32)], -1)
        return (x - self.x_mean) / self.x_std

    @property
    def xi(self) -> jax.Array:
        return self.normalise(self.xi_features["obs"], self.xi_features["action"])

    def encode(self, rewards: list[Reward]) -> jax.Array:
        """Encodings (R, m) of reward callables: values at the reference points, or SF weights."""
        if self.method == "sf":
            vals = jnp.stack([evaluate_reward(r, self.fit_features, "fit points") for r in rewards])
            return ridge_weights(jnp.asarray(self.basis), vals, self.ridge)
        return jnp.stack([evaluate_reward(r, self.xi_features, "reference points") for r in rewards])

    def q_from_encodings(self, enc: jax.Array, obs, actions) -> jax.Array:
        """G[r](s, a) for encoded rewards: (S, b, R)."""
        obs, actions = np.asarray(obs, np.float32), np.asarray(actions, np.float32)
        ds, da = self.xi_features["obs"].shape[1], self.xi_features["action"].shape[1]
        if obs.ndim != 2 or obs.shape[1] != ds:
            raise ValueError(f"observations must have shape (b, {ds}), got {obs.shape}")
        if actions.ndim != 2 or actions.shape != (len(obs), da):
            raise ValueError(f"actions must have shape ({len(obs)}, {da}), got {actions.shape}")
        for name, v in (("observations", obs), ("actions", actions)):
            if not np.all(np.isfinite(v)):
                row = int(np.argwhere(~np.isfinite(v))[0, 0])
                raise ValueError(f"{name} have a non-finite value (NaN or inf) in row {row}")
        if self.scored_under_policy:   # U[r] from the cached keys (the first step is added by q_values)
            return self._answer(self.params, self.normalise(obs, actions), self._summary(self.params, self._keys, enc))
        return self._apply(self.critic_params, self.normalise(obs, actions), self.xi, enc)

    def q_values(self, reward: Reward, observations, actions, seed: int | None = 0,
                 horizon: int | None = None) -> np.ndarray:
        """Q-values of the target policy for ``reward`` at (observations, actions).

        Returns (b,) for one network seed, or (S, b) for all with ``seed=None``. A model of the
        ``policy`` encoding answers G[r](s, a) = r(s, a, .) + gamma U[r](s, a): the first step's
        next quantities from its one-step model, where the reward reads them. ``horizon`` = k > 0
        answers the model-based expansion G_k[r] (``algorithms/expansion.py``): k steps of the
        one-step model under ``target_policy``, then G; the rollout is shared by every reward
        asked at the same points, or, at points too many for one rollout within ``rollouts.budget``
        bytes, made part by part and not kept (the same answers). "auto": k chosen for this reward
        (``choose_horizon``). None: the model's own ``horizon``.
        """
        if seed is not None:
            self._check_seed(seed)
        horizon = self.horizon if horizon is None else horizon
        if horizon == AUTO and self.bank is not None:
            raise ValueError("the horizon's choice (auto) weighs the operator's error as the tail, not the bank's: "
                             "ask a fixed horizon k >= 1 of a model with a bank (METHOD+bK+kk)")
        if not horizon or not len(observations):   # no points: no rollout (nor pi asked), an empty answer
            q = self._q(reward, observations, actions)
        else:
            candidates = self._candidates() if horizon == AUTO else (horizon,)
            self._check_rollout()
            parts = self.rollouts.parts(self.onestep, observations, actions, max(candidates))
            if len(parts) > 1:   # too many points for one rollout in memory: every candidate, part by part
                spread, answers = self._in_parts(reward, observations, actions, candidates, parts, answer=True)
                k = self._choose(reward, observations, actions, spread)[0] if horizon == AUTO else horizon
                q = answers[candidates.index(k)]
            elif (k := self.choose_horizon(reward, observations, actions) if horizon == AUTO else horizon):
                q = expanded_q(self.expansion(observations, actions, k), reward, self._tail(reward), self.gamma)
            else:                # "auto" chose k = 0: the operator alone
                q = self._q(reward, observations, actions)
        return q if seed is None else q[seed]

    def _q(self, reward: Reward, observations, actions) -> np.ndarray:
        """G[r] at (observations, actions) for every seed: (S, b)."""
        q = np.asarray(self.q_from_encodings(self.encode([reward]), observations, actions))[..., 0]
        if self.scored_under_policy:
            q = np.asarray(self.first_step(reward, observations, actions))[None] + self.gamma * q
        return q

    def _tail(self, reward: Reward) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """What answers after the expansion's k steps, at (s_k, pi(s_k)) for every seed (S, rows):
        the bank's values near s_k where the model has a bank, else the operator G[r] itself (at
        no rows, (S, 0), neither is asked)."""
        def operator(obs, actions):
            return self._q(reward, obs, actions)
        answer = operator if self.bank is None else self.bank.build(self.onestep, self.target_policy).tail(
            reward, operator, self.gamma, owner=self)

        def tail(obs, actions):          # no rows (every row in a closed cycle): nothing to encode or look up
            return answer(obs, actions) if len(obs) else np.zeros((self.n_seeds, 0))
        return tail

    def expansion(self, observations, actions, horizon: int) -> Expansion:
        """The one-step model's rollout under ``target_policy`` from the points, ``horizon`` steps,
        its states kept within the data's range. The longest rollout asked for at these points is
        kept in ``rollouts``: a shorter horizon is its prefix. Models given one ``Rollouts`` (with
        the same one-step model and policy) share it."""
        self._check_rollout()
        return self.rollouts.get(self.onestep, self.target_policy, observations, actions, horizon, self._until(),
                                 *self.dynamics(observations))

    def dynamics(self, observations) -> tuple[Dynamics | None, np.ndarray | None]:
        """How the expansions' one-step model steps from the points ``observations`` (n, ds): where the
        run's support check asks for it (``SupportConfig.dynamics``, saved with it), the points whose
        own pi(s) is unsupported are rolled out at the data's nearest actions (``ActionSupport.supported``,
        the rewards still reading pi's), returned with their mask (n,); else (None, None), pi's own.
        The bank's rollouts (``METHOD+bK+kk``), made from the data's states before any point, are pi's own."""
        if self.support is None or not self.support.dynamics or self.target_policy is None or not len(observations):
            return None, None
        obs = np.asarray(observations, np.float32)
        points = (obs.shape, hash(obs.tobytes()))
        held = self._steer                                  # reward-independent: once per check, policy and points
        if held is None or held[0] is not self.support or held[1] is not self.target_policy or held[2] != points:
            held = self._steer = (self.support, self.target_policy, points,
                                  self.support.check(obs, np.asarray(self.target_policy(obs))).unsupported)
        steer = held[3]
        return (self.support.supported, steer) if steer.any() else (None, None)

    def _until(self) -> Until | None:
        """Where each point's rollout stops: where the bank reaches (``BankConfig.reach``), else
        after the k steps asked (None)."""
        if self.bank is None or not self.bank.cfg.reach:
            return None
        return self.bank.build(self.onestep, self.target_policy).until(self.gamma)

    def _check_rollout(self) -> None:
        """One clear error for a model that cannot roll its one-step model out under pi."""
        if self.onestep is None:
            raise ValueError(f"the {self.method!r} model has no one-step model of the data, which the "
                             f"expansion (horizon > 0) rolls out; use a model of the policy encoding "
                             f"({', '.join(k for k, v in NETWORKS.items() if v.encoding == 'policy')})")
        if self.target_policy is None:
            raise ValueError("horizon > 0 rolls the target policy out: set model.target_policy (a callable "
                             "observations (n, ds) -> actions (n, da)), or load the model of a run whose "
                             "policy is known (resolvent.load)")

    def spread_checks(self) -> bool:
        """Whether the one-step model checks itself (an ensemble of more than one kept member: its
        spread under pi) rather than along the data's ``stretches``."""
        return self.onestep is not None and self.onestep.kept > 1

    def can_choose(self) -> bool:
        """Whether horizon "auto" can choose: candidate ``horizons``, ``peers`` for e_op, and the
        one-step model's error (its ensemble's spread, or ``stretches`` for a single model)."""
        return bool(self.peers and self.horizons and (self.spread_checks() or self.stretches is not None))

    def choose_horizon(self, reward: Reward, observations, actions) -> int:
        """k*(r) = argmin_k e_model(r, k) + gamma^(2k) e_op(r) over 0 and ``horizons``
        (``algorithms/horizon.py``): e_model the one-step model's members' spread over the first k
        steps under pi from the points (a model of one kept member: its error along the data's
        ``stretches``), e_op the spread of this operator's and its ``peers``' answers there."""
        return self._choose(reward, observations, actions, None)[0]

    def choose_horizons(self, reward: Reward, observations, actions, groups: list[slice]) -> list[int]:
        """``choose_horizon`` for each group of the points (e.g. a batch's reset points, its
        trajectory points and its dataset states), from one rollout at all of them: each group's
        e_model and e_op are the means over its own points, so one kind of points does not choose
        for another (where the model drifts from the data's states but not along pi's own path)."""
        return self._choose(reward, observations, actions, None, groups)

    def _candidates(self) -> tuple[int, ...]:
        """Horizon "auto"'s candidates, 0 and ``horizons``; one clear error where it cannot choose."""
        if not self.can_choose():
            raise ValueError(f"horizon 'auto' chooses among the run's horizons by the one-step model's error "
                             f"(its ensemble's spread, or along stretches of the data for a single model) and the "
                             f"spread of several operators: load it with resolvent.load(run, '{self.method}+kauto') "
                             f"from a run with horizons and two or more operators (this model has "
                             f"{len(self.horizons)} horizons, {len(self.peers)} peers, "
                             f"{'an ensemble' if self.spread_checks() else 'no ensemble and no stretches'})")
        return (0, *self.horizons)

    def _choose(self, reward: Reward, observations, actions, spread: np.ndarray | None,
                groups: list[slice] | None = None) -> list[int]:
        """``choose_horizons`` (``groups`` None: all the points, one group), its e_model from
        ``spread`` (K, b) where the ensemble's spread at each point was already made part by part
        (``_in_parts``; None: from one rollout at the points)."""
        candidates = self._candidates()
        self._check_rollout()
        answers = np.stack([m.q_values(reward, observations, actions, seed=None, horizon=0).mean(0)
                            for m in (self, *self.peers)])                     # (M, b)
        e_op = answers.var(0)                                                  # (b,)
        if not self.spread_checks():
            tag = (id(self.onestep.params), self.onestep.keep, id(self.onestep.terminal), id(self.target_policy),
                   id(self.stretches))
            if self._validation is None or self._validation[0] != tag:   # reward-independent: once
                self._validation = (tag, validate(self.onestep, self.target_policy, self.stretches))
            e_model = model_errors(self._validation[1], self.stretches, reward, candidates, self.gamma)[:, None]
        elif spread is not None:
            e_model = spread
        else:
            parts = self.rollouts.parts(self.onestep, observations, actions, max(candidates))
            e_model = (point_spread(self.expansion(observations, actions, max(candidates)), reward,
                                    candidates, self.gamma) if len(parts) == 1 else
                       self._in_parts(reward, observations, actions, candidates, parts, answer=False)[0])

        def head(g: slice) -> np.ndarray:                  # a group's e_model (K,); the stretches' is one
            return e_model[:, 0] if e_model.shape[1] == 1 else e_model[:, g].mean(1)

        return [choose(head(g), float(e_op[g].mean()), candidates, self.gamma) for g in (groups or [slice(None)])]

    def _in_parts(self, reward: Reward, observations, actions, candidates: tuple[int, ...], parts: list[slice],
                  answer: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """The expansion at points too many for one rollout in memory (``Rollouts.parts``), part by
        part, each part's rollout of the longest candidate made and dropped: the ensemble's spread
        e_model(r, k) of every candidate k at every point (K, b), and, with ``answer``, G_k[r] at
        every point for every k and seed (K, S, b). Every point's rollout, member weights and sums
        are its own: the answers of one rollout at all points."""
        observations, actions = np.asarray(observations, np.float32), np.asarray(actions, np.float32)
        spread, answers = np.zeros((len(candidates), len(observations))), []
        for part in parts:
            obs, act = observations[part], actions[part]
            ex = expand(self.onestep, self.target_policy, obs, act, max(candidates), self._until(),
                        self.rollouts.buffers, *self.dynamics(obs))
            if self.spread_checks() and len(candidates) > 1:
                spread[:, part] = point_spread(ex, reward, candidates, self.gamma)
            if answer:
                tail = self._tail(reward)
                answers.append(np.stack([expanded_q(ex.prefix(k), reward, tail, self.gamma) if k
                                         else self._q(reward, obs, act) for k in candidates]))   # (K, S, b')
            del ex                        # this part's rollout goes before the next one is made
        return spread, np.concatenate(answers, -1) if answer else None

    def check_support(self, observations) -> SupportCheck:
        """Where the answers at states ``observations`` (b, ds) rest on actions the data never took
        near them: pi's action there against every action the data took at its nearest states
        (``evaluation/support.py``: d_K, in the data's own unit, and which points are unsupported)."""
        if self.support is None:
            raise ValueError(f"{self.method!r} has no action-support check: its run was made before it (rerun "
                             f"`resolvent evaluate ... --resume` on the run to add it)")
        if self.target_policy is None:
            raise ValueError("the support check needs the target policy: set model.target_policy")
        obs = np.asarray(observations, np.float32)
        if obs.ndim != 2:
            raise ValueError(f"the support check needs observations (b, ds), got shape {obs.shape}")
        return self.support.check(obs, np.asarray(self.target_policy(obs)))

    @property
    def has_kernels(self) -> bool:
        """A kernel operator (favor, pi-attention): a mixture of kernels that ``widened`` can widen."""
        return isinstance(self.network, KernelOperator)

    def widened(self, kernel_heads: int, key: jax.Array) -> "OperatorModel":
        """The same operator with ``kernel_heads`` kernels in its occupancy's mixture (favor,
        pi-attention; a multiple of its own): each kernel copied, answering as before up to the
        copies' small noise (``operators.widen_heads``); the one-step model and pi kept."""
        if not self.has_kernels:
            raise ValueError(f"only the kernel operators (favor, pi-attention) have kernels to widen, "
                             f"not {self.method}")
        params = widen_heads(self.params, len(self.arch.hidden), self.arch.kernel_heads, self.arch.features,
                             kernel_heads, key)
        return replace(self, arch=replace(self.arch, kernel_heads=kernel_heads), params=params)

    def first_step(self, reward: Reward, observations, actions) -> jax.Array:
        """r(s, a, .) at the queries (b,): next quantities from the one-step model only where the
        reward reads more than the observation and the action."""
        obs, act = jnp.asarray(observations, jnp.float32), jnp.asarray(actions, jnp.float32)
        if reads(reward, self.xi_features) <= {"obs", "action"}:
            feats = {"obs": obs, "action": act}
        else:
            feats = onestep_model.predict(self.onestep, obs, act)
        return evaluate_reward(reward, feats, "query points")

    def family_reward(self, param: float) -> Reward:
        """The member of this model's family with parameter ``param``."""
        return get_family(self.family).reward_callable(param)

    # ---- persistence -------------------------------------------------------------------
    def save(self, directory: str | Path, name: str | None = None) -> None:
        """Into ``directory`` as ``NAME.json``, ``NAME.npz`` and ``NAME.params`` (NAME: the method;
        a distilled operator's ``METHOD+dK``)."""
        d, name = Path(directory), name or self.method
        d.mkdir(parents=True, exist_ok=True)
        meta = {"method": self.method, "family": self.family, "gamma": self.gamma,
                "arch": asdict(self.arch), "ridge": self.ridge,
                "control": None if self.control is None else asdict(self.control)}
        arrays = {"x_mean": self.x_mean, "x_std": self.x_std,
                  **{f"xi_{k}": np.asarray(v) for k, v in self.xi_features.items()}}
        if self.fit_features is not None:
            arrays.update({f"fit_{k}": np.asarray(v) for k, v in self.fit_features.items()})
            arrays["basis"] = np.asarray(self.basis)
        if self.onestep is not None:
            arrays.update(onestep_model.to_arrays(self.onestep))
        atomic_savez(d / f"{name}.npz", **arrays)
        atomic_write_bytes(d / f"{name}.params", flax.serialization.msgpack_serialize(
            jax.tree_util.tree_map(np.asarray, self.params)))
        atomic_write_bytes(d / f"{name}.json", json.dumps(meta, indent=2).encode())

    @classmethod
    def load(cls, directory: str | Path, method: str) -> "OperatorModel":
        d = Path(directory)
        if not (d / f"{method}.json").is_file():
            have = sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []
            raise FileNotFoundError(f"no trained {method!r} model in {d}; available: {have}")
        try:
            meta = json.loads((d / f"{method}.json").read_text())
            with np.load(d / f"{method}.npz") as z:
                arrays = {k: z[k] for k in z.files}
            params = flax.serialization.msgpack_restore((d / f"{method}.params").read_bytes())
        except Exception as e:  # noqa: BLE001 - any decoding failure means a corrupt file
            raise CheckpointError(f"the saved {method!r} model in {d} is corrupt or incomplete "
                                  f"({type(e).__name__}: {e}); retrain it") from None
        pick = lambda prefix: {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}  # noqa: E731
        try:
            arch = Arch.from_dict(meta["arch"])
            control = None if meta.get("control") is None else Control.from_dict(meta["control"])
            _ = meta["method"], meta["family"], meta["gamma"], arrays["x_mean"], arrays["x_std"]
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CheckpointError(f"{d / f'{method}.json'} (the saved {method!r} model) is damaged "
                                  f"({type(e).__name__}: {e}); retrain it") from None
        return cls(method=meta["method"], family=meta["family"], gamma=meta["gamma"],
                   arch=arch, params=params, xi_features=pick("xi_"),
                   x_mean=arrays["x_mean"], x_std=arrays["x_std"],
                   fit_features=pick("fit_") or None, basis=arrays.get("basis"),
                   ridge=meta.get("ridge", 1e-3), control=control, onestep=onestep_model.from_arrays(arrays))


class MeanModel:
    """The mean of several answers of one run at one horizon (``"favor+kauto~fb+kauto"``):

        Q[r](s, a) = (1 / M) sum_i G^i_k[r](s, a)

    over its ``members`` (``OperatorModel``s of the run, each at its horizon k). Linear and monotone
    in r, and exact on constants, wherever each member is. The members share one one-step model,
    target policy and ``Rollouts`` (the run's are one for all its operators, ``Problem.expansion_model``):
    the answer is the shared rollout's k steps plus the mean of the operators' tails at s_k, one
    rollout for all. Where the operators' answers tie on every trust signal their errors still
    differ, and their mean is the better bet (``trust.with_partners``)."""

    def __init__(self, method: str, members: tuple[OperatorModel, ...]):
        if len(members) < 2:
            raise ValueError(f"{method!r}: a mean of answers needs two or more, got {len(members)}")
        if len({m.n_seeds for m in members}) > 1:
            raise ValueError(f"{method!r}: its answers have different numbers of seeds "
                             f"({', '.join(str(m.n_seeds) for m in members)}); they must come from one run")
        self.method, self.members = method, members
        first = members[0]
        for m in members[1:]:             # one rollout serves every member
            m.onestep = m.onestep if first.onestep is None else first.onestep
            m.target_policy, m.rollouts = first.target_policy, first.rollouts

    def __getattr__(self, name: str):
        """What the members share (family, gamma, the reference points' quantities, input sizes,
        ``n_seeds``, ``family_reward``, ...): the first member's."""
        if name in ("members", "method"):      # not yet set: no recursion
            raise AttributeError(name)
        return getattr(self.members[0], name)

    @property
    def horizon(self) -> int | str:
        return self.members[0].horizon

    @property
    def target_policy(self) -> Callable | None:
        return self.members[0].target_policy

    @target_policy.setter
    def target_policy(self, policy: Callable | None) -> None:
        for m in self.members:
            m.target_policy = policy

    def q_values(self, reward: Reward, observations, actions, seed: int | None = 0,
                 horizon: int | None = None) -> np.ndarray:
        """The mean of the members' ``OperatorModel.q_values``: (b,) for one network seed, (S, b) for
        all with ``seed=None``; ``horizon`` as there, asked of every member. "auto" is chosen once,
        by the first member, for all: its e_op is the spread of the same operators as every member's
        and its e_model the shared one-step model's, so each member would choose the same k."""
        horizon = self.horizon if horizon is None else horizon
        if horizon == AUTO and len(observations):
            horizon = self.members[0].choose_horizon(reward, observations, actions)
        return np.mean([m.q_values(reward, observations, actions, seed=seed, horizon=horizon)
                        for m in self.members], 0)

    def policy(self, reward: Reward, seed: int = 0, key: int = 0) -> "Policy":
        raise ValueError(f"{self.method!r} is a mean of answers of fixed-policy operators: it has no policy of its "
                         f"own; train a control model with `resolvent optimize`")


class Policy:
    """A zero-shot policy for one reward: ``policy(observation) -> action``.

    Takes one observation (ds,) or a batch (n, ds) and returns actions (da,) or (n, da),
    within the action bounds, for a Gymnasium environment of the model's family.
    """

    def __init__(self, act, params, xi, enc, s_mean, s_std, key):
        self._act, self.params, self.xi, self.enc = act, params, xi, enc       # enc: (m,)
        self.s_mean, self.s_std, self.key = s_mean, s_std, key

    def __call__(self, observation) -> np.ndarray:
        obs = np.asarray(observation, np.float32)
        single = obs.ndim == 1
        obs = obs[None] if single else obs
        if obs.ndim != 2 or obs.shape[1] != len(self.s_mean):
            raise ValueError(f"observation must have shape ({len(self.s_mean)},) or "
                             f"(n, {len(self.s_mean)}), got {np.shape(observation)}")
        if not np.all(np.isfinite(obs)):
            raise ValueError(f"observation has a non-finite value (NaN or inf) in row "
                             f"{int(np.argwhere(~np.isfinite(obs))[0, 0])}")
        self.key, k = jax.random.split(self.key)
        s = (jnp.asarray(obs) - self.s_mean) / self.s_std                      # (n, ds)
        enc = jnp.broadcast_to(self.enc, (len(obs),) + self.enc.shape)       # (n, m)
        a = np.asarray(self._act(self.params, s, self.xi, enc, k))            # (n, da)
        return a[0] if single else a


REBUILT = {"results.json": "move it away to rebuild it from the run (--resume)",
           "config.json": "restore it from a copy: it holds the run's settings, which nothing else does"}
# what to do with a damaged run file (``read_run_json``): results.json is remade from the run's checkpoints


def read_run_json(path: Path) -> dict:
    """A run's (or a sweep's) JSON file: {} where there is none; where it is damaged (not JSON, not
    a JSON object) one error naming the file and what to do (``REBUILT``)."""
    if not path.is_file():
        return {}
    what = REBUILT.get(path.name, "move it away and run again what wrote it")
    try:
        found = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is corrupt ({e}); {what}") from None
    if not isinstance(found, dict):
        raise CheckpointError(f"{path} is not a resolvent run file (a JSON object, not {type(found).__name__}); "
                              f"{what}")
    return found


TRUTH_METRICS = tuple(f"{kind}{rewards}_mse" for rewards in ("test", "probe") for kind in ("", "traj_", "data_"))
# results.json's errors against the ground truth that rank a run's answers (``default_method``)


def default_method(run_dir: str | Path) -> tuple[str, str]:
    """The answer ``load`` gives a run when no method is named, and why:

    1. the one ``method="auto"`` chose (results.json's ``auto``: the trust report's rule);
    2. else, where the run measured its answers against the ground truth, the most accurate: the
       lowest geometric mean over ``TRUTH_METRICS`` (test and probe rewards at each kind of
       points, mean over seeds) of its MSE over the best answer's, ties to the longest expansion,
       then the run's order (a run of the README's main job: an operator's G_400, where the
       operator alone, the paper's attention, has 1e3-1e4 times its test MSE);
    3. else, where the run made the trust report (a dataset of one's own, operators named), the
       answer auto's rule keeps among the run's (results.json's ``trusted``);
    4. else the run's first operator answering by its horizon chosen per reward (``+kauto``,
       reference-free) where the run has that answer, else that operator alone.

    Read from the run's results.json (and config.json for 4); a run with neither has no answer."""
    run = Path(run_dir)
    found = read_run_json(run / "results.json")
    chosen = found.get("auto", {}).get("chosen")
    if chosen:
        return chosen, "the answer method auto kept"
    answers = {m: e for m, e in found.get("methods", {}).items() if m != "fqe"}
    metrics = [k for k in TRUTH_METRICS if answers and all(np.size(e.get(k, [])) for e in answers.values())]
    err = {m: np.array([np.mean(np.asarray(e[k], float)) for k in metrics]) for m, e in answers.items()}   # (M,)
    err = {m: np.where(np.isfinite(v), np.maximum(v, 1e-300), np.inf) for m, v in err.items()}   # diverged: worst
    best = np.min(list(err.values()), 0) if answers else np.zeros(0)                            # (M,)
    used = np.isfinite(best)                                                  # (M,) the errors some answer has
    if used.any():
        score = {m: float(np.exp(np.mean(np.log(v[used] / best[used])))) for m, v in err.items()}
        pick = min(answers, key=lambda m: (score[m], -horizon_rank(split_method(m)[1])))   # ties: the run's order
        return pick, (f"the run's most accurate against its ground truth: its MSEs {score[pick]:.3g}x the best "
                      f"answer's, geometric mean over {', '.join(np.asarray(metrics)[used])}")
    trusted = found.get("trusted", {}).get("chosen")
    if trusted:
        return trusted, "the answer auto's rule keeps among the run's, by its trust report"
    methods = read_run_json(run / "config.json").get("methods", ())
    first = next((m for m in methods if m not in ("fqe", "auto")), None)
    if first is None:
        raise CheckpointError(f"{run_dir} holds no finished run (no results.json, no operator in a config.json): "
                              f"name the method to load")
    if f"{first}+k{AUTO}" in answers:
        return f"{first}+k{AUTO}", "the run's first operator, its horizon chosen per reward"
    return first, "the run's first operator"


def load(run_dir: str | Path, method: str | None = None) -> OperatorModel | MeanModel:
    """The trained ``method`` operator of a finished ``resolvent evaluate`` run directory; with no
    method, ``default_method``'s: the one ``method="auto"`` chose, else the run's most accurate
    answer against its ground truth, else the one auto's rule keeps by its trust report, else its
    first operator's.
    ``METHOD+kK`` is that operator answering by its model-based expansion of horizon K by default
    (the run's one-step model serves an operator saved without one); ``METHOD+dK`` the operator
    distilled from that expansion (one forward pass), ``METHOD+dK+kk`` its expansion of k steps (the
    student as the tail); ``ANSWER~ANSWER~...`` the mean of those answers at one horizon
    (``MeanModel``, e.g. ``favor+kauto~fb+kauto``). Its ``target_policy`` is the
    run's: the family's TD3 policy, or the ``--policy`` it named (resolved when first used).
    JAX's compiled programs are kept across processes (``paths.compile_cache``)."""
    compile_cache()
    if method is None:
        method = default_method(run_dir)[0]
    if MEAN in method:                    # a mean of answers: each loaded as named, sharing one rollout
        split_method(method)              # one horizon for all, or one clear error
        loaded: dict[str, OperatorModel] = {}   # the run's operators read so far, by file: members and peers
        members, read = [], set()     # the files members were read from: a second member of one file reads its own
        for m in split_mean(method):
            base = split_bank(split_method(m)[0])[0]
            members.append(_load(run_dir, m, loaded, reuse=base not in read))
            read.add(base)
            loaded.setdefault(base, members[-1])
        return MeanModel(method, tuple(members))
    return _load(run_dir, method, {}, reuse=False)


def _load(run_dir: str | Path, method: str, loaded: dict[str, OperatorModel], reuse: bool) -> OperatorModel:
    """``load`` of one answer (no mean). ``loaded``: the run's operators already read, by file
    name (a mean's members and their peers): the peers horizon "auto" asks alone (``q_values(...,
    horizon=0)``) and the one-step model are taken from there, and with ``reuse`` (no earlier member
    of the mean reads this operator's file) the operator itself, so a mean reads each file once."""
    base, horizon = split_method(method)
    base, banked = split_bank(base)
    if banked and not (isinstance(horizon, int) and horizon >= 1):
        raise ValueError(f"{method!r}: the bank answers after k >= 1 model steps (the query's own action first): "
                         f"name it {base}+b{banked}+kK, e.g. {base}+b{banked}+k30")
    models = Path(run_dir) / "models"
    model = loaded[base] if reuse and base in loaded else OperatorModel.load(models, base)
    config = read_run_json(Path(run_dir) / "config.json")
    model.target_policy, model.horizon = config_policy(config), horizon
    # the run's one check for all its answers: a mean's later members take the first's
    model.support = next((m.support for m in loaded.values() if m.support is not None), None) or load_support(models)
    if horizon and model.onestep is None:   # the one-step model is the data's: any model of the run holding one
        model.onestep = next((m.onestep for m in loaded.values() if m.onestep is not None), None)
    if horizon and model.onestep is None:
        for path in sorted(models.glob("*.npz")):
            if path.name in (STRETCHES, BANK, SUPPORT):
                continue
            with np.load(path) as z:
                model.onestep = onestep_model.from_arrays({k: z[k] for k in z.files if k.startswith("onestep_")})
            if model.onestep is not None:
                break
    if banked:
        model.bank = load_bank(models, banked)
    if horizon == AUTO:   # the run's candidates, its stretches of the data and its other operators
        model.horizons = tuple(int(k) for k in config.get("horizons", ()))
        model.stretches = load_stretches(models)
        for m in config.get("methods", ()):   # the run's other operators
            if m not in ("fqe", base, *loaded) and (models / f"{m}.json").is_file():
                loaded[m] = OperatorModel.load(models, m)
        model.peers = tuple(loaded[m] for m in config.get("methods", ()) if m != base and m in loaded)
    return model


def attach_rule(model: OperatorModel | MeanModel, rule: Callable | None) -> None:
    """The environment's termination rule, set on the model's and its peers' one-step models (a
    mean's: every member's and theirs) where they were fitted for one (``onestep.OneStepModel.split``):
    a rule given in Python, which a saved model does not hold (one named MODULE:ATTR it does)."""
    members = model.members if isinstance(model, MeanModel) else (model,)
    for m in (p for member in members for p in (member, *member.peers)):
        if m.onestep is not None and m.onestep.split:
            m.onestep = m.onestep._replace(terminal=rule)


STRETCHES = "stretches.npz"   # a run's stretches of the data, beside its models


def save_stretches(stretches: Stretches, directory: str | Path) -> None:
    """A run's stretches of the data beside its models (``load`` attaches them to METHOD+kauto)."""
    atomic_savez(Path(directory) / STRETCHES, alive=stretches.alive,
                 **{f"f_{k}": np.asarray(v) for k, v in stretches.features.items()})


def load_stretches(directory: str | Path) -> Stretches | None:
    """The stretches saved beside a run's models (None: the run has none)."""
    path = Path(directory) / STRETCHES
    if not path.is_file():
        return None
    try:
        with np.load(path) as z:
            return Stretches({k[2:]: z[k] for k in z.files if k.startswith("f_")}, z["alive"])
    except Exception as e:  # noqa: BLE001 - any decoding failure means a corrupt file
        raise CheckpointError(f"{path} is corrupt or incomplete ({type(e).__name__}: {e}); "
                              f"rerun the run's evaluation (--resume) to write it again") from None


SUPPORT = "support.npz"   # a run's action-support check (``evaluation/support.py``), beside its models


def save_support(support: ActionSupport, directory: str | Path) -> None:
    """The run's action-support check beside its models (``load`` attaches it to every answer)."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    support.save(Path(directory) / SUPPORT)


def load_support(directory: str | Path) -> ActionSupport | None:
    """The action-support check saved beside a run's models (None: a run made before it)."""
    path = Path(directory) / SUPPORT
    if not path.is_file():
        return None
    try:
        return ActionSupport.load(path)
    except Exception as e:  # noqa: BLE001 - any decoding failure means a corrupt file
        raise CheckpointError(f"{path} is corrupt or incomplete ({type(e).__name__}: {e}); "
                              f"rerun the run's evaluation (--resume) to write it again") from None


BANK = "bank.npz"   # a run's bank: its configuration and the states it rolls out from, beside its models


def save_bank(bank: Bank, directory: str | Path) -> None:
    """The bank's configuration and starting states (P, ds) beside a run's models: ``load``
    gives it back, rolled out again when first asked (the one-step model and pi are
    deterministic: the same bank)."""
    atomic_savez(Path(directory) / BANK, starts=bank.starts, config=np.array(json.dumps(asdict(bank.cfg))))


def load_bank(directory: str | Path, horizon: int) -> Bank:
    """The run's bank (its starting states; rolled out when first asked, by the model that holds
    it); its horizon must be the one named (``METHOD+bK``)."""
    path = Path(directory) / BANK
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: this run has no bank (run evaluate with --bank.points P)")
    try:
        with np.load(path) as z:
            cfg, starts = from_dict(BankConfig, json.loads(str(z["config"]))), z["starts"]
    except Exception as e:  # noqa: BLE001 - any decoding failure means a corrupt file
        raise CheckpointError(f"{path} is corrupt or incomplete ({type(e).__name__}: {e}); "
                              f"rerun the run's evaluation (--resume) to write it again") from None
    if cfg.horizon != horizon:
        raise ValueError(f"this run's bank rolls out {cfg.horizon} steps, not {horizon}: "
                         f"name it METHOD+b{cfg.horizon}+kK")
    return Bank(cfg, starts)


def split_bank(base: str) -> tuple[str, int]:
    """``"favor+b400"`` -> ("favor", 400): an operator and the horizon of the bank it answers
    with (0: none)."""
    name, sep, k = base.partition("+b")
    if not sep:
        return base, 0
    if not (k.isdigit() and int(k) > 0):
        raise ValueError(f"{base!r}: an operator with the run's bank is named OPERATOR+bK+kk, K the bank's "
                         f"rollout steps (e.g. favor+b400+k30)")
    return name, int(k)


def split_method(method: str) -> tuple[str, int | str]:
    """``"favor+k30"`` -> ("favor", 30): an operator and its expansion horizon (0: none; "auto":
    ``favor+kauto``, chosen per reward). A mean of answers at one horizon (``MEAN``), e.g.
    ``"favor+k30~fb+k30"`` -> ("favor~fb", 30); answers at different horizons are not one."""
    if MEAN in method:
        parts = [split_method(m) for m in split_mean(method)]
        if len({k for _, k in parts}) > 1:
            raise ValueError(f"{method!r}: a mean of answers is named ANSWER~ANSWER~... with every answer at one "
                             f"horizon (e.g. favor+kauto~fb+kauto)")
        return MEAN.join(b for b, _ in parts), parts[0][1]
    base, sep, k = method.partition("+k")
    if sep and k == AUTO:
        return base, AUTO
    if sep and not (k.isdigit() and int(k) > 0):
        raise ValueError(f"{method!r}: an expansion is named OPERATOR+kK with K >= 1 model steps (e.g. favor+k30), "
                         f"or OPERATOR+kauto")
    return base, int(k) if sep else 0


def split_mean(method: str) -> tuple[str, ...]:
    """``"favor+kauto~fb+kauto"`` -> ("favor+kauto", "fb+kauto"): the answers a mean is of (one
    answer: itself); two or more distinct answers, each named."""
    names = tuple(method.split(MEAN))
    if len(names) > 1 and (not all(names) or len(set(names)) < len(names)):
        raise ValueError(f"{method!r}: a mean of answers names two or more distinct answers, ANSWER~ANSWER~... "
                         f"(e.g. favor+kauto~fb+kauto)")
    return names


def horizon_rank(horizon: int | str) -> int:
    """An order of horizons for ties: auto below every fixed horizon (those are linear in r)."""
    return -1 if horizon == AUTO else int(horizon)


class RunPolicy:
    """A run's target policy, resolved at its first call: the family's TD3 policy or ``MODULE:ATTR``."""

    def __init__(self, family: str | None, ref: str | None):
        self.family, self.ref, self._policy = family, ref, None

    def __call__(self, observations) -> np.ndarray:
        if self._policy is None:
            self._policy = load_target_policy(self.family) if self.ref is None else load_object(self.ref)
        return np.asarray(self._policy(np.asarray(observations, np.float32)), np.float32)


def run_policy(run_dir: str | Path) -> RunPolicy | None:
    """The target policy a run's config.json names, or None (a policy given in Python, or no
    config.json); a damaged config.json is named (``read_run_json``)."""
    return config_policy(read_run_json(Path(run_dir) / "config.json"))


def config_policy(cfg: dict) -> RunPolicy | None:
    """The target policy a run's configuration (its config.json's content) names, or None."""
    if cfg.get("data") is None and cfg.get("family"):
        return RunPolicy(cfg["family"], None)
    return RunPolicy(None, cfg["policy"]) if cfg.get("policy") else None
