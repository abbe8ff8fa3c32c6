"""The data's bank: a new reward's answer at new points from rollouts made once, before any reward.

The expansion G_K (``algorithms/expansion.py``) is the most accurate answer measured here, but a
new set of points costs a K-step rollout of every ensemble member (K = 400: about a minute at 1e4
points on this CPU). The bank moves that rollout to fit time: the one-step model is rolled out K
steps under pi from P of the data's states (half of them the episodes' first states, where a
user's reset states are), every member its own, and the states after steps 1 to T of every kept
member's rollout are its bank states x_b = (s_b, pi(s_b)) (the starting states themselves, the
same for every member, are not: one state with E values). A new reward r gives every bank state its value
from the rest of its own rollout, and a new point (s, a) its answer from k steps of the one-step
model and the values of the bank states nearest to s_k:

    B_k[r](s, a) = sum_e w_e (sum_{t<k} gamma^t c^e_t r(x^e_t) + gamma^k c^e_k V[r](s^e_k))
    V[r](s') = sum_{i in N(s')} v_i V_i[r],   v_i = (1 / d_i) / sum_{j in N(s')} (1 / d_j)
    V_i[r] = G_{K-t}[r](x_{b,t})               (``expansion.along_q``: the rest of the same rollout)

N(s') the ``neighbours`` bank states nearest to s' in the data's standardised states (a k-d
tree's search, approximate by ``eps``: exact, it was most of a new point's cost in HalfCheetah's
17 dimensions, and eps = 1 gave the same answers), d_i their distances. V is a weighted mean
(weights >= 0, summing to 1) of expansions that are linear and monotone in r, so B_k is too, and
exact for a constant where G is (V_i[c] = c / (1 - gamma)). The neighbours depend on the points
only; a new reward costs its values along the bank's rollouts (P m K reward evaluations and P m
operator calls, m the kept members: one rollout's answer, not a new rollout) and a gather.
k >= 1: the first step is the query's own action, the bank holds pi's.

Where pi jumps between nearby states (a swing-up's chattering at the top), bank states a tenth of
a step apart can hold pi's opposite actions and values apart by the reward's action term; with
``actions`` = a > 0 the nearest are searched over (s / sigma_s, a pi(s) / sigma_a), pi's actions
at the bank states and at s' (sigma the one-step model's input scales). The weights stay >= 0,
summing to 1, and depend on the points only. Measured on Pendulum-Angle (favor+b400+k60,
``results/accuracy/bank/lookup/``): along pi's trajectories on replay test MSE 0.115 -> 0.027 at
a = 1 (G_400: 0.015), but at expert's reset points 0.16 -> 0.34, one state at the top; off by
default.

Each point its own k (``reach``): a point near the bank needs few model steps, one far from it
(a reset state mid swing-up) many. With ``reach`` > 0 the k of ``METHOD+bK+kk`` is the most: a
point stops rolling after step t >= ``least`` where its state (its kept members' mean) lies, on
average, within ``reach`` x ``step`` of its ``neighbours`` bank states (``step`` the median distance
a bank state moved in its last step: a scale of the system's own; the bank states searched for at
steps least, 2 least, 4 least, ... and followed along their own rollouts in between: ``Reach``),
and the bank answers there,

    B[r](s, a) = sum_e w_e (sum_{t<k_i} gamma^t c^e_t r(x^e_t) + gamma^k_i c^e_k_i V[r](s^e_k_i)),

k_i depending on the point and the rollout only, so every property above holds. The model steps
only the points still rolling (``expansion.rollout``'s until).

Where the closed loop splits (Pendulum's swing-up settling into one of two cycles at the top,
whose values differ by 11 for an angle reward), bank states a hundredth of a step apart go
different ways, and a point's members may too: a point stopped there answers by a mean over both
(the README main job: 5 of 64 reset points held 93% of the bank's MSE, 0.26 against G_400's
0.047). So a point stops only where its futures agree (``agree`` > 0): every member's
``neighbours`` nearest bank states, searched at that member's own state, have futures

    F_b = sum_{u>=t} gamma^(u-t) c_u s_u / sum_{u>=t} gamma^(u-t) c_u     (their own rollout, s standardised)

within ``agree`` of their mean; a point that fails is not looked at again before twice the step.
F depends on the bank alone, so the stop rule stays reward-free. Measured there
(``results/accuracy/bank/agree/``): agree 0.03 takes the bank's test MSE 0.26 -> 0.049 (G_400
0.047), 6.7 -> 10 model steps a point on average; 1e4 new points answered in 0.9-1.1 s where
G_400 takes 4.2 s. On HalfCheetah-Vel expert no point's futures agree within 0.03 (17
dimensions, a gait's), so every point rolls its k steps, answers unchanged. So the default sets
the tolerance in the bank's own scale (``agree_spread`` = c, used where ``agree`` is 0): c x
``Bank.spread``, the 99% quantile over the bank states of the same spread among each one's nearest
bank states (Pendulum-Angle expert 0.0079, HalfCheetah-Vel expert 0.59), so one value means "far
more split than the bank's own neighbourhoods" on every dataset. c = 4 (the default) gives
Pendulum's 0.03 and its answers to the bit; on HalfCheetah-Vel expert, the noisy HalfCheetah and
MountainCar it holds a few points or none, their answers the same or a little better
(``results/accuracy/bank/agree/spread/``).

Measured (``results/accuracy/bank/``; P = 2048, T = 100, 8 neighbours): on Pendulum-Angle expert
(favor) k = 30 steps and the bank answer with test MSE 0.30 / 0.025 / 0.018 at the reset,
trajectory and dataset points, where G_30 alone has 29.6 / 20.2 / 19.8 and G_400 0.055 / 0.019 /
0.015; on HalfCheetah-Vel expert (favor, fb) k = 10-30 and the bank beat G_400's probe R^2 at
every kind of point. At 1e4 new points the k-step rollout is most of the cost; with ``reach`` =
0.1 each Pendulum point takes 6.4 steps on average, favor+b400+k30 answering 1e4 of them in 0.91 s
(3.6 s with 30 steps each) and better at the reset points (0.166 / 0.032 / 0.091); on HalfCheetah
favor+b400+k60 beats G_400 at every kind of point (``results/accuracy/bank/reach/``).

Pure pieces: ``BankConfig``, ``bank_starts`` (the P states), ``Bank`` (the starting states; once
built, the rollout, its states' search tree, the values of the last reward asked).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Callable

import numpy as np
from scipy.spatial import cKDTree

from resolvent.algorithms.expansion import Policy, along_q, expand
from resolvent.algorithms.onestep import OneStepModel
from resolvent.keys import name_id

NEAR_KEPT = 8   # sets of states whose nearest bank states are kept (``Bank.near``)
SPREAD_STATES = 16384   # bank states drawn for ``Bank.spread``'s quantile (all of a smaller bank)
AUTO_POINTS = -1     # BankConfig.points: a bank of AUTO_BANK_POINTS states under method auto, none otherwise
AUTO_BANK_POINTS = 2048
Bootstrap = Callable[[np.ndarray, np.ndarray], np.ndarray]   # G[r] at (s, pi(s)): (rows, ds), (rows, da) -> (S, rows)


@dataclass(frozen=True)
class BankConfig:
    """The data's bank (``METHOD+bK+kk``: k model steps, then the bank's values)."""

    points: int = 0               # P: the data's states the bank rolls out from (0: no bank; -1: 2048 under
    #                               method auto, at most the data's transitions, else none: ``resolve``)
    horizon: int = 400            # K: model steps of each bank rollout before the operator
    steps: int = 100              # T: the states after steps 1..T of every rollout kept as bank states (T < K)
    neighbours: int = 8           # bank states whose values are averaged (weights 1 / distance)
    starts: float = 0.5           # the share of the P states drawn from the episodes' first states
    eps: float = 1.0              # approximate search: each neighbour within (1 + eps) x the true one's distance
    reach: float = 0.1            # stop a point's rollout within reach x the bank's median step of it (0: k steps)
    least: int = 5                # the fewest model steps before a point may stop (reach > 0)
    agree: float = 0.0            # stop only where every member's nearest bank states go one way: their futures
    #                               (discounted mean standardised states ahead) within this of their mean (0: by
    #                               agree_spread)
    agree_spread: float = 4.0     # where agree is 0, its tolerance in the bank's own scale: this many times
    #                               ``Bank.spread``, the 99% quantile of the same spread among each bank state's
    #                               neighbours (0 with agree 0: a point stops wherever the bank reaches it)
    actions: float = 0.0          # weight of pi's standardised action beside the state in the nearest states' distance

    def __post_init__(self):
        if self.points < AUTO_POINTS:
            raise ValueError(f"bank.points must be >= 0 (0: no bank), or -1 (a bank under method auto), "
                             f"got {self.points}")
        if self.points and not 1 <= self.steps < self.horizon:
            raise ValueError(f"bank.steps must be 1 to bank.horizon - 1 ({self.horizon - 1}), got {self.steps}")
        if self.neighbours < 1:
            raise ValueError(f"bank.neighbours must be >= 1, got {self.neighbours}")
        if not 0.0 <= self.starts <= 1.0:
            raise ValueError(f"bank.starts is a share of the points, 0 to 1, got {self.starts}")
        if self.eps < 0:
            raise ValueError(f"bank.eps must be >= 0 (0: the exact nearest states), got {self.eps}")
        if self.reach < 0:
            raise ValueError(f"bank.reach must be >= 0 (0: every point takes the k steps asked), got {self.reach}")
        if self.actions < 0:
            raise ValueError(f"bank.actions must be >= 0 (0: the nearest by state alone), got {self.actions}")
        if self.agree < 0:
            raise ValueError(f"bank.agree must be >= 0 (0: the tolerance from bank.agree_spread), got {self.agree}")
        if self.agree_spread < 0:
            raise ValueError(f"bank.agree_spread must be >= 0 (0, with bank.agree 0: a point stops wherever the bank "
                             f"reaches it), got {self.agree_spread}")
        if self.least < 1:
            raise ValueError(f"bank.least must be >= 1 (the first step is the query's own action), got {self.least}")

    def resolve(self, auto: bool, transitions: int) -> "BankConfig":
        """The configuration a run uses: ``points`` -1 made ``AUTO_BANK_POINTS`` (at most the
        data's ``transitions``) under method ``auto``, whose rule may keep the bank's answer
        (``experiments/trust.with_bank``), and 0 otherwise; any other value as given."""
        if self.points != AUTO_POINTS:
            return self
        return replace(self, points=min(AUTO_BANK_POINTS, transitions) if auto else 0)


def episode_starts(obs: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
    """The rows of the data's transitions that begin an episode (stored episode by episode): the
    first row, and every row whose obs is not the row before's next_obs."""
    return np.flatnonzero(np.r_[True, np.any(obs[1:] != next_obs[:-1], 1)])


def bank_starts(features: dict, cfg: BankConfig, seed: int) -> np.ndarray:
    """The P states the bank rolls out from (P, ds): ``starts`` of them the episodes' first states
    (all of them where there are fewer), the rest drawn from every state of the data, without
    replacement."""
    obs, nxt = np.asarray(features["obs"], np.float32), np.asarray(features["next_obs"], np.float32)
    if cfg.points > len(obs):
        raise ValueError(f"bank.points ({cfg.points}) is more than the dataset's {len(obs)} transitions")
    rng = np.random.default_rng(seed)
    first = episode_starts(obs, nxt)
    first = rng.choice(first, min(len(first), round(cfg.starts * cfg.points)), replace=False)
    rest = rng.choice(np.setdiff1d(np.arange(len(obs)), first), cfg.points - len(first), replace=False)
    return obs[np.sort(np.r_[first, rest])]


class Bank:
    """The bank: its starting states (P, ds), and once ``build`` has rolled them out under a
    one-step model and pi, the kept members' live states after steps 1 to T and the search for
    the nearest of them. Built when first asked (``OperatorModel`` builds it with its own one-step
    model and target policy), so a model loaded before its policy is set can carry one."""

    def __init__(self, cfg: BankConfig, starts: np.ndarray):
        self.cfg, self.starts = cfg, np.asarray(starts, np.float32)
        self._by: tuple | None = None            # (one-step model, policy) of the rollout made

    def build(self, onestep: OneStepModel, policy: Policy) -> "Bank":
        """The K-step rollout from the starting states and the tree over its states, made once
        for this one-step model and policy (again for others). Returns the bank."""
        if self._by is not None and self._by[0] is onestep and self._by[1] is policy:
            return self
        ex = expand(onestep, policy, self.starts, policy(self.starts), self.cfg.horizon)
        self.rollout = ex.rows(ex.kept)                                                 # the kept members': m P rows
        del ex
        t, ds = self.cfg.steps, self.starts.shape[1]
        self.path_alive = self.rollout.alive[1:t + 1].reshape(-1) > 0.5                 # (T m P,)
        self.rows = np.flatnonzero(self.path_alive)                                     # (B,) of T m P: the live
        if not len(self.rows):
            raise ValueError(f"the bank has no states: every rollout from its {len(self.starts)} starting states "
                             f"ended at its first step (a termination rule that ends every transition?)")
        self.scale = np.asarray(onestep.x_std[:ds], np.float32)
        self.states = self.rollout.steps["obs"][1:t + 1].reshape(-1, ds)[self.rows]    # (B, ds)
        self.path = (self.rollout.steps["obs"][1:t + 1] / self.scale).reshape(-1, ds)   # (T m P, ds) standardised
        moved = np.diff(self.rollout.steps["obs"][:t + 1], axis=0) / self.scale         # (T, m P, ds) s_t - s_{t-1}
        self.step = float(np.median(np.linalg.norm(moved, axis=-1).reshape(-1)[self.rows]))   # into each bank state
        self.tree = cKDTree(self.path[self.rows])                                       # the bank states, standardised
        self.lookup = self.tree                                                         # the tail's search
        if self.cfg.actions:                                                            # over (s, pi(s)) standardised
            self.action_scale = np.asarray(onestep.x_std[ds:], np.float32) / self.cfg.actions
            acts = self.rollout.steps["action"][1:t + 1].reshape(len(self.path), -1)      # (T m P, da) pi(s_t)
            self.lookup = cKDTree(np.concatenate([self.path, acts / self.action_scale], 1)[self.rows])
        self._values: tuple | None = None        # (reward, bootstrap's owner, (S, B)): the last asked
        self._near: dict = {}                    # (shape, hash of the states) -> ((n, N) rows, (n, N) weights)
        self._futures: dict = {}                 # gamma -> (T m P, ds) F_b
        self._spread: dict = {}                  # gamma -> Bank.spread
        self._rules: dict = {}                   # gamma -> the stop rule (one object: a rollout's cache reads it)
        self._by = (onestep, policy)
        return self

    def __len__(self) -> int:
        return len(self.rows)

    def values(self, reward: Callable, bootstrap: Bootstrap, gamma: float, owner: object = None) -> np.ndarray:
        """V_i[r] at every bank state (S, B): G_{K-t}[r] at x_{b,t}, the operator ``bootstrap``
        after step K. The last reward's values are kept, per ``owner`` (the operator)."""
        held = self._values
        if held is not None and held[0] is reward and held[1] is owner:
            return held[2]
        v = along_q(self.rollout, reward, bootstrap, gamma, tuple(range(1, self.cfg.steps + 1)))   # (S, T, m P)
        v = v.reshape(*v.shape[:-2], -1)[..., self.rows]                                    # (S, B)
        self._values = (reward, owner, v)
        return v

    def neighbours_of(self, obs: np.ndarray, action: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The nearest bank states to each row of ``obs`` (n, ds): their rows (n, N) and weights
        (n, N), 1 / distance normalised to sum to 1 (a state of the bank itself: its own value).
        With ``actions`` > 0 the distance is over (s, pi(s)), ``action`` (n, da) pi's at ``obs``
        (None: the bank's policy asked)."""
        n = min(self.cfg.neighbours, len(self.rows))                                # a bank smaller than N: all of it
        key = np.asarray(obs, np.float32) / self.scale                              # (n, ds)
        if self.cfg.actions:
            action = self._by[1](obs) if action is None else action
            key = np.concatenate([key, np.asarray(action, np.float32).reshape(len(key), -1) / self.action_scale], 1)
        d, i = self.lookup.query(key, k=n, eps=self.cfg.eps, workers=-1)
        d, i = d.reshape(len(obs), -1), i.reshape(len(obs), -1)                     # (n, N)
        w = np.where(d[:, :1] < 1e-9, d < 1e-9, 1.0 / np.maximum(d, 1e-9))         # on a bank state: its own
        return i, w / w.sum(1, keepdims=True)

    def near(self, obs: np.ndarray, action: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``neighbours_of``, kept for the last ``NEAR_KEPT`` sets of states asked: every reward at
        the same points (at each of their horizons) shares them."""
        obs = np.asarray(obs, np.float32)
        tag = (obs.shape, hash(obs.tobytes()))
        if tag not in self._near:
            if len(self._near) >= NEAR_KEPT:
                del self._near[next(iter(self._near))]                               # the oldest
            self._near[tag] = self.neighbours_of(obs, action)
        return self._near[tag]

    def futures(self, gamma: float) -> np.ndarray:
        """F_b (T m P, ds) at every step 1..T of every kept member's bank rollout: the discounted
        mean of its standardised states from there to step K, weighted by its survival."""
        if gamma not in self._futures:
            obs = self.rollout.steps["obs"] / self.scale                                # (K, m P, ds)
            alive = self.rollout.alive[:-1, :, None].astype(np.float64)                # (K, m P, 1)
            total, weight = np.zeros(obs.shape[1:]), np.zeros(alive.shape[1:])
            out = np.empty((self.cfg.steps, *obs.shape[1:]), np.float32)             # (T, m P, ds)
            for t in range(len(obs) - 1, 0, -1):            # sum_{u>=t} gamma^(u-t) c_u (s_u, 1), from the end
                total, weight = alive[t] * obs[t] + gamma * total, alive[t] + gamma * weight
                if t <= self.cfg.steps:
                    out[t - 1] = total / np.maximum(weight, 1e-12)
            self._futures[gamma] = out.reshape(-1, obs.shape[-1])
        return self._futures[gamma]

    def spread(self, gamma: float) -> float:
        """The bank's own disagreement, the scale of ``agree_spread``: over the bank states (at most
        ``SPREAD_STATES`` of them, drawn once), the 99% quantile of how far the futures F of each one's
        ``neighbours`` nearest bank states (itself among them) lie from their mean at most,

            max_{i in N(b)} ||F_i - mean_{j in N(b)} F_j||

        (Pendulum-Angle expert 0.0079, HalfCheetah-Vel expert 0.59: results/accuracy/bank/agree/spread/;
        over their whole banks 0.0078 and 0.56, spreads.txt there)."""
        if gamma not in self._spread:
            rows = self.rows
            if len(rows) > SPREAD_STATES:
                rows = np.sort(np.random.default_rng(name_id("bank-spread")).choice(rows, SPREAD_STATES, replace=False))
            f = self.futures(gamma)                                                     # (T m P, ds)
            _, i = self.tree.query(self.path[rows], k=min(self.cfg.neighbours, len(self.rows)), eps=self.cfg.eps,
                                   workers=-1)
            near = f[self.rows[np.reshape(i, (len(rows), -1))]]                        # (b, N, ds)
            self._spread[gamma] = float(np.quantile(
                np.linalg.norm(near - near.mean(1, keepdims=True), axis=-1).max(1), 0.99))
        return self._spread[gamma]

    def until(self, gamma: float) -> Callable[[int, int], "Reach"]:
        """The stop rule of a rollout (``expansion.rollout``'s until: (n points, E members) -> its
        ``Reach``), the futures discounted by ``gamma``; one object per gamma."""
        if gamma not in self._rules:
            self._rules[gamma] = partial(Reach, self, gamma)
        return self._rules[gamma]

    def tail(self, reward: Callable, bootstrap: Bootstrap, gamma: float, owner: object = None) -> Bootstrap:
        """V[r] as an expansion's tail: (s_k (rows, ds), pi(s_k)) -> (S, rows)."""
        def lookup(obs: np.ndarray, action: np.ndarray | None) -> np.ndarray:
            v = self.values(reward, bootstrap, gamma, owner)                          # (S, B)
            i, w = self.near(obs, action)                                             # (rows, N)
            return (v[..., i] * w).sum(-1)                                            # (S, rows)
        return lookup


class Reach:
    """Where one rollout's points stop rolling (``BankConfig.reach``): after at least ``least``
    steps, a point whose state s_t (its kept members' mean) lies, on average, within ``reach`` x
    ``step`` of its neighbours in the bank (``step`` the median distance a bank state moved in its
    last step). The ``neighbours`` nearest bank states are searched at steps least, 2 least, 4 least,
    ...; in between, each neighbour found at step t_0 is followed along its own rollout, to its
    state t - t_0 steps later (a bank state again, while within the bank's T steps and alive): the
    mean distance to those bounds the mean distance to the nearest from above, at the cost of a
    gather (in HalfCheetah's 17 dimensions one search costs several model steps)."""

    def __init__(self, bank: Bank, gamma: float, n: int, members: int):
        self.bank, self.gamma = bank, gamma
        self.k = min(bank.cfg.neighbours, len(bank.rows))
        self.found = np.full((n, self.k), -1)        # (n, N) bank rows (of T m P) found at each point's last search
        self.at = np.zeros(n, int)                   # (n,) the step of each point's last search
        self.next = np.full(n, bank.cfg.least)       # (n,) the step of its next search
        self.within = bank.cfg.reach * bank.step     # the mean distance at which a point stops
        self.held = np.zeros(n, int)                 # (n,) where futures split: no stop before this step
        self.agree = bank.cfg.agree or bank.cfg.agree_spread * (bank.spread(gamma) if bank.cfg.agree_spread else 0.0)
        #                                              the futures' tolerance (0: none)

    def __call__(self, t: int, obs: np.ndarray, weights: np.ndarray, live: np.ndarray) -> np.ndarray:
        """(E n', ds) states, (E, n') member weights, (n',) the points' indices -> (n',) stop."""
        bank, (e, n) = self.bank, weights.shape
        if t < bank.cfg.least:
            return np.zeros(n, bool)
        s = (np.asarray(obs, np.float32).reshape(e, n, -1) * weights[..., None]).sum(0) / bank.scale   # (n', ds)
        due = self.next[live] <= t                                                       # (n',) to search now
        if due.any():   # neighbours beyond 2 reach step cannot make a mean within reach step: not searched for
            _, i = bank.tree.query(s[due], k=self.k, eps=bank.cfg.eps, distance_upper_bound=2 * self.within,
                                   workers=-1)
            i = np.reshape(i, (int(due.sum()), -1))                                     # (n'', N); B where none
            self.found[live[due]] = np.where(i < len(bank.rows), bank.rows[np.minimum(i, len(bank.rows) - 1)], -1)
            self.at[live[due]], self.next[live[due]] = t, 2 * t
        mp = bank.rollout.alive.shape[1]                                                 # m P rollouts
        later = self.found[live] + ((t - self.at[live]) * mp)[:, None]                   # (n', N) t - t_0 steps on
        ok = (self.found[live] >= 0) & (later < bank.cfg.steps * mp)
        later = np.where(ok, later, 0)
        ok &= bank.path_alive[later]
        there = bank.path[later]                                                         # (n', N, ds)
        far = np.where(ok, np.linalg.norm(there - s[:, None], axis=-1), np.inf).mean(-1)  # (n',)
        stop = (far <= self.within) & (self.held[live] <= t)
        if self.agree and stop.any():
            at = np.flatnonzero(stop)
            split = self.split(np.asarray(obs, np.float32).reshape(e, n, -1)[:, at])      # (n'',)
            stop[at[split]] = False
            self.held[live[at[split]]] = 2 * t
        return stop

    def split(self, obs: np.ndarray) -> np.ndarray:
        """(E, n'', ds) every member's state at n'' points -> (n'',) whether the futures F of the
        members' nearest bank states (each member's own ``neighbours``) lie farther than
        ``agree`` (or ``agree_spread`` x ``Bank.spread``) from their mean."""
        bank, (e, n, ds) = self.bank, obs.shape
        _, i = bank.tree.query(obs.reshape(-1, ds) / bank.scale, k=self.k, eps=bank.cfg.eps, workers=-1)
        f = bank.futures(self.gamma)[bank.rows[np.reshape(i, (e, n, -1))]]              # (E, n'', N, ds)
        f = f.transpose(1, 0, 2, 3).reshape(n, -1, ds)                                   # (n'', E N, ds)
        return np.linalg.norm(f - f.mean(1, keepdims=True), axis=-1).max(1) > self.agree
