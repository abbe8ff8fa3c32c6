"""Model-based expansion under the target policy: the first k steps from the one-step model of the
data, the rest from the operator.

    G_k[r](s, a) = sum_{t<k} gamma^t c_t r(x_t) + gamma^k c_k G[r](s_k, pi(s_k))

    x_0 = (s, a, D(s, a)),  s_{t+1} = next_obs of x_t,  x_{t+1} = (s_{t+1}, pi(s_{t+1}), D(...))
    c_0 = 1,  c_{t+1} = c_t (1 - terminated_t)        (the model's termination, clipped to [0, 1])

with D the one-step model (``algorithms/onestep.py``) and G the trained operator. The Q of a
reward is decided early by the transient of the first steps (a swing-up, a rate of change), where
an occupancy learned by Bellman backups is smoothest and a model of a deterministic system is
most exact; the expansion puts those steps in the model and leaves G the tail, discounted by
gamma^k. G_k keeps the operator's exact properties: linear and monotone in r (c_t >= 0), and
``G_k[c] = c (1 - gamma^k) / (1 - gamma) + gamma^k G[c] = c / (1 - gamma)`` where G is
constant-exact and nothing terminates. k = 0 is G itself.

With an ensemble of E one-step models every member rolls out on its own, and the answer is a
mean over members with weights that depend on the rollouts only:

    G_k[r](s, a) = sum_e w_e(s, a) G_k^e[r](s, a),    w_e = 1/m for the m = ``keep`` members whose
    rollouts are closest to the others' (smallest sum_t sum_e' ||(s^e_t - s^e'_t) / sigma||), else 0

(sigma the data's state scale; t over the steps where some member's episode goes on, c^e_t > 0
for some e: the steps no answer pays do not rank the members). A member whose closed loop ran
away is dropped at that point, for every reward alike; the weights are >= 0 and sum to 1, so
linearity, monotonicity and the constants hold as above.

Where a point's rollout comes back to a cycle of the closed loop (``rollout``'s ``cycle``) its
later steps are copies (``Repeats``): a reward is evaluated at each row's distinct steps alone
and weighed by the discounts and survivals of the steps that copy them (``Expansion.fold``), and,
with the one-step model's ``close`` (the default), a row that repeats its cycle from a step
before k is answered by the cycle kept up forever instead of the operator at s_k:

    G_k[r](s, a) = sum_{t<k} gamma^t c_t r(x_t) + gamma^k c_k sum_{i<p} gamma^i P_i r(x_{k+i}) / (1 - gamma^p P_p)

(``Expansion.closure``; P_i the survival over the cycle's first i steps), the rollout to any
horizon, so still linear, monotone and constant-exact.

The rollout depends neither on the reward nor on the operator: ``expand`` runs it once per set of
query points, ``Expansion.prefix`` gives every shorter horizon from the same rollout (its first
j steps, with the weights of those steps), and ``expanded_q`` answers every reward from it with
k reward evaluations and one operator call (``along_q``: the same rollout's answers at its own
later states, every member alone, the targets of the expansion's distillation). ``Rollouts`` keeps
the longest rollout asked for at a set of points, so several operators and horizons share one.
``rollout`` is the loop itself, for any actor: the horizon's choice (``algorithms/horizon.py``)
rolls the model along the data with it. A rollout holds (k + 1) E n states: at points too many
for ``ROLLOUT_BYTES`` the answers are made in parts of the points (``Rollouts.parts``).
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse
from numpy._core import multiarray
from tqdm.auto import tqdm

from resolvent.algorithms.onestep import OneStepModel, member_weights, noise_scale, rollout_step
from resolvent.blocks import on_cpu
from resolvent.rewards import probes

Policy = Callable[[np.ndarray], np.ndarray]      # observations (n, ds) -> actions (n, da)
Dynamics = Callable[[np.ndarray, np.ndarray], np.ndarray]   # (states (b, ds), actions (b, da)) -> the actions
#                                                             (b, da) the one-step model steps at (``rollout``)
STATES = ("obs", "next_obs")                     # a rollout's states, kept once (``rollout``)
PROGRESS_ROWS = 2 ** 22                          # a rollout of k E n >= this many model steps shows a progress bar
ROLLOUT_BYTES = 2 ** 31   # the most one rollout kept for further rewards may hold (``Rollouts``): 400 steps of
#                           five members at 1e4 Ant-Dir points hold 9.0 GiB, Pendulum-Angle's 0.67 GiB
REWARD_BYTES = 2 ** 26    # a reward reads a rollout's steps in chunks of at most about this many bytes of inputs (JAX
#                           copies what it reads: the whole rollout at once would copy its states again)
INPUT_BYTES = 2 ** 28     # the most the distinct steps' inputs of one request may hold to be kept for the next reward
CHUNK_ROWS = 2 ** 17       # the shortest chunk of a long list of distinct steps a reward is evaluated in (``chunks``)
MEMO = 8                  # the reward-free quantities of this many requests kept per rollout (``Expansion.remember``)


@dataclass(frozen=True)
class Repeats:
    """Where a rollout repeats a cycle of the closed loop (``rollout``'s ``cycle``), or a point that
    stopped at its own step k_i (``until``) its frozen step (from k_i + 1, period 1): every quantity
    of row j's step u >= first[j] is step u - period[j]'s, to the bit, so a reward's values along
    the row are copies of those at its first[j] distinct steps. A row's distinct steps are listed
    row after row (``offsets``, ``positions``); ``source`` says where each step's value is."""

    first: np.ndarray         # (E n,) d_j in 1..k: the row's distinct steps are 0..d_j - 1 (k: it repeats none)
    period: np.ndarray        # (E n,) p_j >= 1: the length of the cycle it repeats (1 where it repeats none)

    def prefix(self, horizon: int) -> "Repeats | None":
        """The repeats of the rollout's first ``horizon`` steps (None: it repeats nothing before)."""
        return Repeats(np.minimum(self.first, horizon), self.period) if np.any(self.first < horizon) else None

    def offsets(self, rows: np.ndarray) -> np.ndarray:
        """(N + 1,) where each of ``rows``' distinct steps begin in their list, and its length last."""
        return np.r_[0, np.cumsum(self.first[rows])]

    def positions(self, rows: np.ndarray, size: int) -> np.ndarray:
        """(F,) the distinct steps (u, j) of ``rows``, row after row, as u size + j: their places
        in a (k, size, ...) array of the rollout's quantities, flattened over its first two axes."""
        off = self.offsets(rows)                                                       # (N + 1,)
        return within(off) * size + np.repeat(rows, np.diff(off))

    def source(self, horizon: int, rows: np.ndarray) -> np.ndarray:
        """(k, N) each step's place in ``rows``' list of distinct steps: u itself below d_j, else
        the cycle's step it copies, d_j - p_j + (u - d_j) mod p_j."""
        return self.offsets(rows)[:-1] + self.copied(horizon, rows)

    def copied(self, horizon: int, rows: np.ndarray) -> np.ndarray:
        """(k, N) the distinct step each of the rows' first k steps is (or copies), within its row:
        u below d_j, else d_j - p_j + (u - d_j) mod p_j, made in place in one int32 array (one
        (k, N) array where the plain expression made five of int64: 0.5 GB to write at 1e4 points)."""
        d, p = self.first[rows].astype(np.int32), self.period[rows].astype(np.int32)   # (N,)
        u = np.arange(horizon, dtype=np.int32)[:, None]                                # (k, 1)
        out = u - d                                                                    # (k, N) u - d_j
        np.remainder(out, p, out=out)
        out += d - p                                                                   # d_j - p_j + (u - d_j) mod p_j
        np.copyto(out, np.broadcast_to(u, out.shape), where=u < d)                     # u itself below d_j
        return out


def chunks(f: int, most: int, least: int | None = None) -> list[tuple[int, int]]:
    """A list of f >= 1 entries in consecutive chunks (start, length), every length a power of two
    of at most ``most``: ``most`` as often as it fits, then the binary digits of the rest rounded up
    to a multiple of ``least`` (both powers of two; ``CHUNK_ROWS`` by default), the last chunk
    ending at the list's end (it overlaps the one before by fewer than ``least`` entries), or,
    where the rest is all there is, one chunk that may be longer than the list (the caller pads
    it): fewer than ``least`` entries evaluated in vain, where one length for every chunk wastes
    up to half of them."""
    least = min(CHUNK_ROWS if least is None else least, most)
    if f <= least:
        return [(0, 1 << max(f - 1, 0).bit_length())]
    rest = -(-(f % most) // least) * least                                     # the rest rounded up
    sizes = [most] * (f // most) + [1 << b for b in range(rest.bit_length() - 1, -1, -1) if rest >> b & 1]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    starts[-1] = max(0, min(starts[-1], f - sizes[-1]))          # 0: one chunk longer than the list
    return list(zip(starts, sizes))


def within(offsets: np.ndarray) -> np.ndarray:
    """(F,) each entry's index in its own row's list, for lists laid row after row from ``offsets`` (N + 1,)."""
    return np.arange(offsets[-1]) - np.repeat(offsets[:-1], np.diff(offsets))


class Held(NamedTuple):
    """The last reward evaluated along a rollout: at every row, (k', E n) values; or, along a
    rollout with repeats, its values at the distinct steps 0..first_j - 1 of each row j of ``rows``,
    row after row."""

    reward: Callable
    values: np.ndarray              # (k', E n), or (F,)
    first: np.ndarray | None = None   # (N,) the distinct steps' counts the values are listed by (None: every step)
    rows: np.ndarray | None = None    # (N,) the rows they are of (None: every row)


@dataclass(frozen=True)
class Expansion:
    """A k-step rollout of the one-step model under pi from n query points, every member of an
    ensemble its own (E n rows, member e's at [e n, (e + 1) n))."""

    steps: dict               # x_t's quantities (obs, action, next_obs, scalars) at the k steps: (k, E n, ...)
    alive: np.ndarray         # (k + 1, E n) c_t: 1 until the model's episode terminates
    obs: np.ndarray           # (E n, ds) s_k, where the operator takes over
    action: np.ndarray        # (E n, da) pi(s_k) (the query's action where k = 0)
    apart: np.ndarray         # (k + 1, E, n) sum_{t<=j} sum_e' ||(s^e_t - s^e'_t) / sigma|| after j steps
    #                           (the steps t where some member's c_t > 0)
    keep: int                 # m, the members kept per point (0: all)
    ends: np.ndarray | None = None   # (n,) k_i: each point's own last step (``rollout``'s until; None: k everywhere)
    last: list = field(default_factory=lambda: [None], compare=False, repr=False)
    # [Held]: the last reward evaluated along this rollout, shared with its prefixes
    repeats: Repeats | None = None   # where the rows repeat a cycle (None: nowhere)
    close: bool = False       # a row repeating its cycle before step k: the cycle kept up forever (``closure``)
    memo: dict = field(default_factory=dict, compare=False, repr=False)
    # what a rollout with repeats needs for any reward, per request (``remember``), shared with prefixes
    copies: int = 1           # R: a noisy rollout's copies, its members E R (member e's copy r: e R + r)

    @property
    def horizon(self) -> int:
        return len(self.alive) - 1

    @property
    def row_ends(self) -> np.ndarray:
        """(E n,) each row's own last step k_i (``ends``, every member of a point alike; k where none)."""
        if self.ends is None:
            return np.full(self.alive.shape[1], self.horizon)
        return np.tile(self.ends, self.apart.shape[1])

    @cached_property
    def weights(self) -> np.ndarray:
        """(E, n) w_e: the members' weights per point, >= 0, summing to 1; of a noisy rollout's E R
        members, each copy's ``keep`` closest to the others of that copy, 1 / (m R) each."""
        members, n = self.apart.shape[1:]
        if self.copies == 1:
            return member_weights(self.apart[-1], self.keep)
        e = members // self.copies
        return member_weights(self.apart[-1].reshape(e, -1), self.keep).reshape(members, n) / self.copies

    @cached_property
    def kept(self) -> np.ndarray:
        """(m n,) the rows of E n whose member weighs at its point, w_e > 0."""
        return np.flatnonzero(self.weights.reshape(-1))

    def member_mean(self, q: np.ndarray) -> np.ndarray:
        """Every member's value at every point (..., E n) -> their mean by ``weights`` (..., n)."""
        w = self.weights                                                               # (E, n)
        return (q.reshape(*q.shape[:-1], *w.shape) * w).sum(-2)

    def step_rewards(self, reward: Callable, what: str, rows: np.ndarray | None = None) -> np.ndarray:
        """r(x_t) at every step of every member's rollout (``what`` names the points in its
        errors): (k, E n), or at the E n rows ``rows`` only: (k, len(rows)). The steps go to the
        reward in chunks of one length, each at most about ``REWARD_BYTES`` of inputs (the last
        chunk ends at step k, repeating fewer steps than there are chunks: one shape, one
        compilation), compiled where all its rows together would be. The last reward asked at
        every row is kept, for this rollout and its prefixes: choosing a horizon and answering at
        it (kauto) evaluate the reward along the rollout once. Along a rollout with ``repeats``
        the reward is evaluated at the distinct steps alone (``distinct_rewards``) and copied."""
        if self.repeats is not None and self.horizon:
            at = np.arange(self.alive.shape[1]) if rows is None else np.asarray(rows)
            return self.distinct_rewards(reward, what, at)[self.repeats.source(self.horizon, at)]
        held = self.last[0]
        if held is not None and held.reward is reward and held.first is None and len(held.values) >= self.horizon:
            return held.values[:self.horizon] if rows is None else held.values[:self.horizon, rows]
        k, n_rows = self.horizon, self.alive.shape[1] if rows is None else len(rows)
        r = np.empty((k, n_rows), np.float32)
        row_bytes = self.row_bytes()
        most = max(1, REWARD_BYTES // max(1, row_bytes * n_rows))                      # steps a call may hold
        chunks = -(-k // most)                                                          # ceil(k / most)
        per = -(-k // max(chunks, 1))                    # ceil(k / chunks): the last chunk repeats < chunks steps
        compiled = k * n_rows >= probes.COMPILE_ROWS
        for lo in (min(i * per, k - per) for i in range(chunks)):
            def chunk(v, at=slice(lo, lo + per)):     # (k, E n, ...) -> (per rows, ...), made when the reward reads it
                return (v[at] if rows is None else np.take(v[at], rows, 1)).reshape(-1, *v.shape[2:])
            r[lo:lo + per] = np.asarray(jax.device_get(probes.evaluate_reward(
                reward, probes.Columns(self.steps, chunk), what, compiled=compiled, rows=per * n_rows))
            ).reshape(per, n_rows)
        if rows is None:
            self.last[0] = Held(reward, r)
        return r

    def row_bytes(self) -> int:
        """The bytes of one step of one row of the rollout's quantities."""
        return sum(v.dtype.itemsize * int(np.prod(v.shape[2:])) for v in self.steps.values())

    def distinct_rewards(self, reward: Callable, what: str, rows: np.ndarray) -> np.ndarray:
        """r(x_t) at the distinct steps of the rows ``rows`` of a rollout with ``repeats``, row
        after row (``Repeats.positions``): (F,). Read from the last reward held where it is this
        one at at least those steps, at every row or at these rows; else evaluated in chunks whose
        lengths are powers of two (``chunks``; a list shorter than one chunk padded with its last
        entry), each at most about ``REWARD_BYTES`` of inputs: the lists of every set of points and
        horizon share a few shapes, so a reward written op by op compiles each operation a few
        times, not once per list; and held."""
        first, size = self.repeats.first, self.alive.shape[1]
        held = self.last[0]
        if held is not None and held.reward is reward and held.first is not None:
            at = rows if held.rows is None else np.arange(len(rows)) if np.array_equal(held.rows, rows) else None
            off = self.repeats.offsets(rows)                                             # (N + 1,)
            if at is not None and np.all(np.diff(off) <= held.first[at]):   # the same steps, or more, of these rows
                return held.values[np.repeat(np.r_[0, np.cumsum(held.first)][at], np.diff(off)) + within(off)]
        places = self.remember(("places", self.horizon, rows.tobytes()),
                               lambda: self.repeats.positions(rows, size))                       # (F,)
        f = len(places)
        most = 1 << (max(1, REWARD_BYTES // max(1, self.row_bytes())).bit_length() - 1)   # a power of two
        pieces = chunks(f, most)
        if f < pieces[0][1]:                                      # one chunk, its tail the last entry again
            places = np.r_[places, np.full(pieces[0][1] - f, places[-1])]
        made = self.remember(("inputs", self.horizon, rows.tobytes()), dict) if f * self.row_bytes() <= INPUT_BYTES \
            else {}                                               # each chunk's gathered inputs, by its start
        r = np.empty(len(places), np.float32)
        for lo, per in pieces:
            def chunk(v, at=places[lo:lo + per]):   # (k, E n, ...) -> (per, ...), made when the reward reads it
                return jnp.asarray(np.take(v.reshape(-1, *v.shape[2:]), at, 0))   # kept as JAX's: no copy per reward
            r[lo:lo + per] = np.asarray(jax.device_get(probes.evaluate_reward(
                reward, probes.Columns(self.steps, chunk, made.setdefault(lo, {})), what,
                compiled=f >= probes.COMPILE_ROWS, rows=per)))
        r = r[:f]
        every = len(rows) == size and np.array_equal(rows, np.arange(size))
        self.last[0] = Held(reward, r, first if every else first[rows], None if every else np.array(rows))
        return r

    def fold(self, gamma: float, steps, rows: np.ndarray) -> np.ndarray:
        """(J, F) the weight of each distinct step's reward of the rows ``rows`` in ``sums_at``'s
        sum over the first j steps, for each j of ``steps``: gamma^u c_u summed over the steps u < j
        that are (copies of) it, and below each row's own k_i where the points stopped at their own
        steps (``ends``). Depends on the rollout alone: kept per request, for its prefixes too.

        The rows go in groups by the steps they pay, min(k_i, k) rounded up to a power of two: a
        row's steps from its own k_i on weigh 0, so a group's are summed over its length alone (the
        bank's points stop after 5-130 of 400 steps); each distinct step is one row's, so its sum
        is the same to the bit."""
        def make() -> np.ndarray:
            k = self.horizon
            offsets = self.repeats.offsets(rows)
            base, f = offsets[:-1], offsets[-1]                                         # (N,) each row's list start
            pays = np.minimum(self.row_ends[rows], k)                                   # (N,) steps a row pays
            length = np.minimum(k, 2 ** np.ceil(np.log2(np.maximum(pays, 1))).astype(np.int64))   # (N,)
            groups = [(int(n), np.flatnonzero(length == n)) for n in np.unique(length)]   # (steps, their rows)
            weights = []
            for n, at in groups:
                w = gamma ** np.arange(n)[:, None] * self.alive[:n, rows[at]]           # (n, N_g)
                if self.ends is not None:                                               # a row's own k_i steps only
                    w = w * (np.arange(n)[:, None] < pays[at])
                weights.append((n, base[at] + self.repeats.copied(n, rows[at]), w))     # (n, N_g) places, weights
            sums, lo, acc = {0: np.zeros(f)}, 0, np.zeros(f)
            for j in sorted(set(steps) - {0}):
                for n, src, w in weights:
                    if lo < n:
                        acc = acc + np.bincount(src[lo:j].reshape(-1), w[lo:j].reshape(-1), minlength=f)
                sums[j], lo = acc, j
            return np.stack([sums[j] for j in steps]) if len(steps) else np.zeros((0, f))
        return self.remember(("fold", self.horizon, gamma, tuple(steps), rows.tobytes()), make)

    def weigh(self, fold: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The rows' sums of their distinct steps' rewards ``values`` (F,) by ``fold`` (J, F): (J, N),
        one j at a time (a (J, F) product at once is 4x slower, from memory)."""
        if not len(rows):
            return fold[:, :0]
        at, v = self.repeats.offsets(rows)[:-1], np.asarray(values, np.float64)
        return np.stack([np.add.reduceat(f * v, at) for f in fold]) if len(fold) else np.zeros((0, len(rows)))

    def remember(self, key: tuple, make: Callable):
        """``make()``, kept under ``key`` in ``memo`` (the last ``MEMO`` requests'): reward-free."""
        if key not in self.memo:
            if len(self.memo) >= MEMO:
                self.memo.pop(next(iter(self.memo)))
            self.memo[key] = make()
        return self.memo[key]

    def discounted_rewards(self, reward: Callable, gamma: float, what: str) -> np.ndarray:
        """gamma^t c_t r(x_t) at every step of every member's rollout: (k, E n)."""
        r = self.step_rewards(reward, what)                                            # (k, E n)
        return gamma ** np.arange(self.horizon)[:, None] * self.alive[:self.horizon] * r

    def sums_at(self, reward: Callable, gamma: float, what: str, steps, rows: np.ndarray | None = None) -> np.ndarray:
        """Every member's discounted reward sum over its rollout's first j steps, for each j of
        ``steps`` (0 <= j <= k): (J, E n), or at the E n rows ``rows`` only (the reward evaluated
        there alone): (J, len(rows)),

            h_e(j) = sum_{u<j} gamma^u c_u r(x^e_u),

        one pass over the rollout between consecutive j, without a (k, E n) temporary; along a
        rollout with ``repeats``, the distinct steps' rewards by their weights (``fold``, made once)."""
        if any(not 0 <= j <= self.horizon for j in steps):
            raise ValueError(f"step counts of a {self.horizon}-step rollout are 0 to {self.horizon}, got {list(steps)}")
        if self.repeats is not None and self.horizon:        # the distinct steps' rewards, each by its weight
            at = np.arange(self.alive.shape[1]) if rows is None else np.asarray(rows)
            return self.weigh(self.fold(gamma, steps, at), self.distinct_rewards(reward, what, at), at)
        alive = self.alive if rows is None else self.alive[:, rows]                    # (k + 1, rows)
        r = self.step_rewards(reward, what, rows) if self.horizon else np.zeros((0, alive.shape[1]))   # (k, rows)
        disc = gamma ** np.arange(self.horizon)                                        # (k,)
        sums, lo, acc = {0: np.zeros(r.shape[1])}, 0, np.zeros(r.shape[1])
        for j in sorted(set(steps) - {0}):
            acc = acc + np.einsum("u,un,un->n", disc[lo:j], alive[lo:j], r[lo:j])        # (rows,)
            sums[j], lo = acc, j
        return np.stack([sums[j] for j in steps]) if len(steps) else np.zeros((0, r.shape[1]))

    def settled(self, gamma: float, rows: np.ndarray) -> tuple[np.ndarray, scipy.sparse.csr_array]:
        """Where the rows ``rows`` are closed (N,), and each of their distinct steps' weight in
        ``expanded_q``'s reward part, as the (N, F) sparse matrix that sums a row's distinct steps'
        rewards by them (one pass, ``@``): its discounts and survivals over the first k steps
        (``fold``) plus, at a closed row, over the cycle kept up forever after them
        (``cycle_weights``). Reward-free: kept per request."""
        def make() -> tuple[np.ndarray, scipy.sparse.csr_array]:
            weight = self.fold(gamma, [self.horizon], rows)[0]                         # (F,)
            closed = np.zeros(len(rows), bool)
            if self.close:
                closed, w, places = self.cycle_weights(gamma, rows)                    # (N,) (N, P) (N, P)
                weight = weight + np.bincount(places.reshape(-1), w.reshape(-1), minlength=len(weight))
            return closed, scipy.sparse.csr_array((weight, np.arange(len(weight)), self.repeats.offsets(rows)),
                                                  shape=(len(rows), len(weight)))
        return self.remember(("settled", self.horizon, gamma, self.close, rows.tobytes()), make)

    def closure(self, reward: Callable, gamma: float, what: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the rows ``rows`` are closed (``close``, and a cycle repeated from a step d_j < k),
        (N,) bool, and there the rest of their rollout after step k, the cycle kept up forever
        (0 at the open rows): (N,)

            sum_{u>=k} gamma^u c_u r(x_u) = gamma^k c_k sum_{i<p} gamma^i P_i r(x_{k+i}) / (1 - gamma^p P_p),

        P_i = prod_{l<i} (1 - tau(x_{k+l})), tau the model's termination clipped to [0, 1], and
        x_{k+i} the cycle's step it copies (its reward among the distinct steps' at these rows,
        ``distinct_rewards``). The rollout from a state it came back to is the same again (the
        model and pi are deterministic), so this is the rollout to any horizon, and the operator is
        not asked there."""
        n = len(rows)
        if not self.close or self.repeats is None or not self.horizon:
            return np.zeros(n, bool), np.zeros(n)
        closed, w, places = self.remember(("closure", self.horizon, gamma, rows.tobytes()),
                                          lambda: self.cycle_weights(gamma, rows))
        if not np.any(closed):
            return closed, np.zeros(n)
        return closed, (w * self.distinct_rewards(reward, what, rows)[places]).sum(1)

    def cycle_weights(self, gamma: float, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``closure``'s reward-free part: the closed rows (N,), and the weight of each step of
        their cycle, gamma^k c_k gamma^i P_i / (1 - gamma^p P_p) (N, P), with its place in the rows'
        list of distinct steps (N, P)."""
        k, n = self.horizon, len(rows)
        d, p = self.repeats.first[rows][:, None], self.repeats.period[rows][:, None]   # (N, 1)
        closed = (d[:, 0] < k) & (self.row_ends[rows] >= k)   # a stopped point repeats its frozen step: not closed
        i = np.arange(CYCLE_PERIOD)                                                     # (P,)
        src = d - p + (k + i - d) % p                                                   # (N, P) the steps copied
        phase = i < p                                                                   # (N, P) within one cycle
        go = np.ones(src.shape)                                                         # (N, P) 1 - tau
        if "terminated" in self.steps:
            tau = self.steps["terminated"].reshape(-1)[src * self.alive.shape[1] + rows[:, None]]
            go = np.where(phase, 1.0 - np.clip(tau, 0.0, 1.0), 1.0)
        lived = np.cumprod(np.c_[np.ones(n), go[:, :-1]], 1)                           # (N, P) P_i
        lap = go.prod(1)                                                                 # (N,) P_p
        scale = gamma ** k * self.alive[k, rows] / (1 - gamma ** p[:, 0] * lap)         # (N,)
        w = np.where(phase & closed[:, None], gamma ** i * lived * scale[:, None], 0.0)  # (N, P)
        return closed, w, self.repeats.offsets(rows)[:-1, None] + src

    def rows(self, rows: np.ndarray) -> "Expansion":
        """The rollouts of some of the E n rows (``rows``, e.g. the kept members'), each now a
        point of its own with one member (weight 1): what ``along_q`` answers along them, copied
        out (the states once, as ``rollout`` keeps them), so the other rows' memory can go."""
        if self.ends is not None:
            raise ValueError("a rollout whose points stop at their own steps has no whole rollout per row to keep")
        steps = {key: v[:, rows] for key, v in self.steps.items() if key not in STATES}
        if self.horizon:
            states = np.concatenate([self.steps["obs"][:, rows], self.obs[rows][None]])   # (k + 1, rows, ds)
            steps |= {"obs": states[:-1], "next_obs": states[1:]}
        return Expansion(steps, self.alive[:, rows], self.obs[rows], self.action[rows],
                         np.zeros((len(self.alive), 1, len(rows))), 0,
                         repeats=None if self.repeats is None else Repeats(
                             self.repeats.first[rows], self.repeats.period[rows]).prefix(self.horizon),
                         close=self.close)

    def prefix(self, horizon: int) -> "Expansion":
        """The same rollout stopped after ``horizon`` <= k steps: identical to ``expand`` with that
        horizon (the model and pi are deterministic), without rolling out again."""
        if not 0 <= horizon <= self.horizon:
            raise ValueError(f"a prefix of a {self.horizon}-step rollout has 0 to {self.horizon} steps, got {horizon}")
        if horizon == self.horizon:
            return self
        # x_j = (s_j, pi(s_j)): where the operator takes over
        return Expansion({key: v[:horizon] for key, v in self.steps.items()}, self.alive[:horizon + 1],
                         self.steps["obs"][horizon], self.steps["action"][horizon], self.apart[:horizon + 1],
                         self.keep, None if self.ends is None else np.minimum(self.ends, horizon), last=self.last,
                         repeats=None if self.repeats is None else self.repeats.prefix(horizon),
                         close=self.close, memo=self.memo, copies=self.copies)


Actor = Callable[[int, np.ndarray], np.ndarray]   # (step t >= 1, model states (E n, ds)) -> actions (E n, da)
Stop = Callable[[int, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
# (step t >= 1, the rolling points' states (E n', ds), their member weights (E, n'), their indices (n',) of the n)
#   -> (n',) True where the point stops at s_t
Until = Callable[[int, int], Stop]                # (n points, E members) -> one rollout's stop rule


@contextlib.contextmanager
def small_pages():
    """numpy's large arrays (>= 4 MB) made in the kernel's ordinary pages, not marked for
    transparent huge pages as numpy marks them by default on Linux (``madvise(MADV_HUGEPAGE)``),
    numpy's own switch restored on exit. Where the kernel compacts memory on the spot to find a huge
    page (``/sys/kernel/mm/transparent_hugepage/defrag`` = madvise, this project's machines), a
    rollout's ~560 MB of fresh arrays a call at 1e4 points cost 1.1-1.5 s of system time against
    0.26-0.37 s without the mark, the whole rollout 4.59 against 3.77 s (medians; numpy/numpy#31590,
    results/answer-times/pages.txt)."""
    before = multiarray._set_madvise_hugepage(False)
    try:
        yield
    finally:
        multiarray._set_madvise_hugepage(before)


class Buffers:
    """The memory of the rollouts made before, lent to the next once nothing else holds it: a
    rollout's arrays (its states, actions, scalars, survivals and distances; 0.64 GB at 1e4 points
    over 400 steps) made fresh are mapped from the kernel page by page as they are first written
    (about 140,000 page faults a rollout), and given back when the rollout goes. ``Rollouts`` keeps
    one: the rollout it drops for the next set of points lends that one its memory (a new reward's
    whole answer at 1e4 new points, results/answer-times/buffers.txt: page faults 1.4e5 -> 3-7e3 a
    call, the bank's answer 1.46 -> 1.29 s, G_400's 4.38 -> 4.19 s, medians on a quiet machine).

    A buffer is free when no object but this one refers to it: every array made from it is a view
    whose ``base`` is the buffer (numpy's views of views too), so while any of them lives (an
    ``Expansion`` a caller kept, its prefixes, JAX's arrays made from them without a copy) its
    reference count says so. At most ``budget`` bytes are kept; free buffers beyond it go."""

    def __init__(self, budget: int):
        self.budget = budget
        self.held: list[np.ndarray] = []          # (bytes,) uint8 buffers, the oldest first

    def free(self, i: int) -> bool:
        """Whether nothing but this list refers to buffer i (the list's reference and the call's)."""
        return sys.getrefcount(self.held[i]) <= 2

    def take(self, shape: tuple, dtype, fill: float | None = None) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` on the smallest free buffer that holds it (else a new
        one), set to ``fill`` where given (its values otherwise left as they are)."""
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        fits = [i for i in range(len(self.held)) if len(self.held[i]) >= size and self.free(i)]
        buf = self.held.pop(min(fits, key=lambda j: len(self.held[j]))) if fits else np.empty(max(size, 1), np.uint8)
        out = buf[:size].view(dtype).reshape(shape)              # a view: buf is not free while it lives
        if len(buf) <= self.budget:                              # one over the budget: lent, not kept
            self.held.append(buf)                                # the last used last
        del buf
        excess, i = self.nbytes() - self.budget, 0
        while excess > 0 and i < len(self.held):                 # free ones beyond the budget go, oldest first
            if self.free(i):
                excess -= len(self.held.pop(i))
            else:
                i += 1
        if fill is not None:
            out.fill(fill)
        return out

    def nbytes(self) -> int:
        """The bytes of the buffers kept."""
        return sum(map(len, self.held))


def allocate(buffers: Buffers | None, shape: tuple, dtype, fill: float | None = None) -> np.ndarray:
    """An array from ``buffers`` (``Buffers.take``), or a new one where there are none (zeros, ones
    or uninitialised as ``fill`` says)."""
    if buffers is not None:
        return buffers.take(shape, dtype, fill)
    if fill is None:
        return np.empty(shape, dtype)
    return np.zeros(shape, dtype) if fill == 0 else np.full(shape, fill, dtype)


@small_pages()
def rollout(model: OneStepModel, obs: np.ndarray, action: np.ndarray, horizon: int, actor: Actor,
            until: Until | None = None, cycle: float = 0.0, close: bool = False,
            buffers: Buffers | None = None, noise: float = 0.0, copies: int = 1,
            dynamics: Dynamics | None = None, steer: np.ndarray | None = None) -> Expansion:
    """Roll the one-step model ``horizon`` steps from (obs (n, ds), action (n, da)), ``actor``
    choosing every later action from the model's own state, every member of an ensemble on its
    own. Every predicted state is clipped to the data's range (``model.low``, ``model.high``): a
    closed loop through a learned model can run away from where it was fitted. The states are
    kept once, (k + 1, E n, ds): a step's ``obs`` and ``next_obs`` are views of consecutive rows.

    ``until``: each point's own last step k_i <= k (``Expansion.ends``): the rule it makes for this
    rollout is asked after every step of the points still rolling; a point that stops is frozen at
    (s_{k_i}, pi(s_{k_i})) in the later rows (its other quantities 0 there, read by no answer;
    ``Repeats`` says they copy step k_i, so an answer evaluates the reward at k_i + 1 steps), and
    the model steps only the points still rolling, padded to a power of two of at least
    ``FEWEST_ROWS`` (or all n: one compilation per size). Its arrays lie on ``buffers`` where
    given (``Buffers``: memory of rollouts before, not mapped afresh), else are made new.

    A point whose every member's episode has ended at step t (c_t = 0, a model that predicts
    ``terminated``) weighs nothing from there in any answer: its members' distances stop growing
    (the weights rank the members on the steps an answer pays), and once the points still rolling
    fit a smaller batch without it (or none is left) it repeats its last step without the model
    (``Repeats``, period 1: its rows' later steps are not the model's, and read by no answer but
    with weight 0); until then it is rolled on in the padding the batch would have anyway
    (results/accuracy/ended/: MountainCar, where every point's episode ends).

    ``cycle`` > 0 (an actor of the state alone, e.g. pi): a point whose every member's state has
    come back within ``cycle`` (in the data's state scale) of its state p <= ``CYCLE_PERIOD`` steps
    before, at each of the last p + 1 steps, is taken to be in a p-cycle of the closed loop
    s -> D(s, actor(s)), deterministic, and repeats it without the model: from step t on

        x_u = x_{u-p},  s_{u+1} = s_{u+1-p},  c_{u+1} = c_u (1 - terminated(x_u)),  apart grows as over the cycle

    so every answer is the full rollout's, exactly where the return is exact (a fixed point, p = 1,
    or Pendulum's closed loop, which ends chattering about the top in a 2-cycle: 400 steps at 1e4
    points take about 60 model steps a point), to within the tolerance's effect otherwise.

    ``noise`` = c > 0 (a model with its ``residual`` sigma): ``copies`` = R rollouts from every
    point, each model step moving every next state by c sigma eps (c sigma_d at most the model's
    ``noise_cap`` times the data's std in dimension d, ``onestep.noise_scale``), eps ~ N(0, I) a counter-based
    draw of the point's own bytes, member, copy and step (``noise_draws``): independent from point
    to point, and the same for a point asked alone, in any batch or again, before the data's range
    clips it:

        s^{e,r}_{t+1} = D_e(s^{e,r}_t, a^{e,r}_t) + c sigma eps^{e,r}_t,    r = 1..R

    The copies are members of their own: the Expansion has E R members at the n points (member
    e's copy r at rows [(e R + r) n, (e R + r + 1) n)), each copy keeping its ``keep`` members
    closest to the others of that copy, weighed 1/R, so an answer is the mean over the copies of
    the exact rollout's answer: linear, monotone and constant-exact as it is.

    ``dynamics``: the action the model steps at, a function of each row's state and action
    (every step's, the query's own first), for the points of ``steer`` (n,) (None: every point):
    where pi's action at a state is one the data never took near it, the model guesses what it
    does (``evaluation/support.py``), and ``dynamics`` can step it at one the data took there
    instead (``ActionSupport.supported``). The step's quantities are held at the rollout's own
    action all the same (its ``action``, the model's exact action terms), so every reward reads
    pi's: only the states visited change, which depend on the points alone, and every property
    above holds."""
    if horizon < 0:
        raise ValueError(f"horizon must be >= 0 (model steps before the operator), got {horizon}")
    if not len(obs):
        raise ValueError("a rollout needs at least one point to start from, got none")
    if steer is not None and np.shape(steer) != (len(obs),):
        raise ValueError(f"steer must mark each of the {len(obs)} points once, got shape {np.shape(steer)}")
    if noise:
        if model.residual is None:
            raise ValueError("a noisy rollout (onestep noise > 0) moves each step by the one-step model's residual "
                             "std on the data, which this model (saved before it was kept) lacks: fit it again, or "
                             "give it model._replace(residual=onestep.residual_std(model, the data's features))")
        if until is not None:
            raise ValueError("a noisy rollout's copies cannot each stop where the bank reaches: ask a bank without "
                             "reach (bank.reach 0) or onestep noise 0")
        keys = row_keys(obs, action, model.members, copies)                                   # (E R n,)
        obs, action = np.tile(obs, (copies, 1)), np.tile(action, (copies, 1))   # (R n, ...) copy r at [r n, (r+1) n)
        jitter = noise_scale(model, noise)                            # (ds,) c sigma, at most noise_cap std
    e, n = model.members, len(obs)
    if dynamics is not None:        # (E n,) the rows stepped at dynamics' actions: their points', in every copy, member
        marked = np.ones(n, bool) if steer is None else np.tile(np.asarray(steer, bool), n // len(steer))   # (n,)
        steered = np.tile(marked, e)
    s = np.tile(np.asarray(obs, np.float32), (e, 1))                                    # (E n, ds)
    a = np.tile(np.asarray(action, np.float32), (e, 1))                                 # (E n, da)
    alive = allocate(buffers, (horizon + 1, len(s)), np.float32, 1.0)                   # (k + 1, E n) c_t
    states = allocate(buffers, (horizon + 1, *s.shape), np.float32)                     # (k + 1, E n, ds) s_0..s_k
    states[0] = s
    steps = {}                        # the other quantities -> (horizon, E n, ...), filled step by step
    apart = allocate(buffers, (horizon + 1, e, n), np.float64, 0.0)   # sum_t sum_e' ||(s^e_t - s^e'_t) / sigma||
    scale = np.asarray(model.x_std[:s.shape[1]], np.float32)
    pairs = np.triu_indices(e, 1)                                                        # the member pairs e < e'
    ends = np.full(n, horizon)                                                          # (n,) k_i
    live = np.arange(n)                                                                 # the points still rolling
    period = np.zeros(n, int)                                          # (n,) p of a point repeating its cycle (0: none)
    since = np.full(n, horizon)            # (n,) the step from which a point's every quantity repeats its cycle's
    held = np.zeros((CYCLE_PERIOD + 1, n), int)     # (P + 1, n) steps running a point came back to its state p before
    scaled = np.empty((CYCLE_PERIOD + 1 if cycle else 0, *s.shape), np.float32)   # the last P + 1 steps' s_t / sigma,
    if cycle:                                                                   # by t mod (P + 1) (cycles only)
        scaled[0] = s / scale
    groups: list[Group] = []              # the points in a cycle, by its length (``cycle_groups``)
    repeated = groups                     # those repeated at the last step
    stops = None if until is None else until(n, e)
    bar = tqdm(range(1, horizon + 1), desc="model rollout", unit="step", leave=False,
               disable=horizon * len(s) < PROGRESS_ROWS)
    for t in bar:
        alive[t], apart[t] = alive[t - 1], apart[t - 1]       # the rolling points' below, the others' as they stand
        if len(live) == n:                                 # every point rolling: whole arrays, no gathers
            rows = real = got = pts = slice(None)
        else:
            size = batch_rows(len(live), n)
            pad = np.r_[live, np.full(size - len(live), live[0])]                  # (b,) padded
            rows = (np.arange(e)[:, None] * n + pad).reshape(-1)                   # (E b,) member-major
            real = (np.arange(e)[:, None] * n + live).reshape(-1)                  # (E n',)
            got = (np.arange(e)[:, None] * len(pad) + np.arange(len(live))).reshape(-1)   # real rows of the padded
            pts = live
        here, act = s[rows], a[rows]
        if dynamics is None:
            stepped = rollout_step(model, here, act)
        else:                                                        # pi's action held, dynamics' stepped at
            moved, which = act.copy(), steered[rows]
            if which.any():
                moved[which] = np.asarray(dynamics(here[which], act[which]), np.float32)
            stepped = rollout_step(model, here, moved, act)
        x = {k: v[got] for k, v in jax.device_get(stepped).items()}                   # one copy back
        if t == 1:
            steps = {key: allocate(buffers, (horizon, len(s), *v.shape[1:]), v.dtype, 0) for key, v in x.items()
                     if key not in STATES}
        for key in steps:         # the action every point's: the rolling ones' own, the frozen ones' pi(s_k_i)
            if key == "action":
                steps[key][t - 1] = a
            else:
                steps[key][t - 1, real] = x[key]
        term = np.clip(x["terminated"], 0.0, 1.0) if "terminated" in x else 0.0
        alive[t, real] *= 1.0 - term
        nxt = x["next_obs"].astype(np.float32)
        if noise:                                      # (E n', ds) each rolling row's own draw at step t
            nxt = nxt + noise_draws(keys[real], t, nxt.shape[1]) * jitter
        if model.low is not None:
            nxt = np.clip(nxt, model.low, model.high)
        s[real] = nxt
        acts = np.asarray(actor(t, s[rows]), np.float32)
        acts = acts.reshape(len(acts), -1)[got]
        if not np.all(np.isfinite(acts)):
            raise ValueError("the target policy returned a non-finite action on the model's rollout")
        a[real] = acts
        z = (nxt / scale).reshape(e, len(live), -1)                                 # (E, n', ds)
        near = np.zeros((e, e, len(live)), z.dtype)      # ||(s^e_t - s^e'_t) / sigma||, each pair computed once
        near[pairs] = near[pairs[::-1]] = np.sqrt(((z[pairs[0]] - z[pairs[1]]) ** 2).sum(-1))
        ended = alive[t].reshape(e, n)[:, pts].max(0) == 0 if "terminated" in x else None   # (n',) all members'
        apart[t][:, pts] += near.sum(1) if ended is None else np.where(ended, 0.0, near.sum(1))   # (E, n') paid steps'
        states[t] = s
        repeat_cycles(t, groups, steps, states, alive, apart)
        repeated = groups
        if cycle and len(live):
            scaled[t % len(scaled)] = states[t] / scale
            period[live] = cycles(t, scaled, live, e, cycle, held)
        if ended is not None:                 # every member's episode over: its last step repeated, weighing nothing,
            free = period[live] == 0                 # once the batch shrinks for it (else rolled on as its padding)
            still = free & ~ended
            if not still.any() or batch_rows(int(still.sum()), n) < n:
                period[live[ended & free]] = 1
        entered = live[period[live] > 0]
        if len(entered):
            since[entered] = min(t + 1, horizon)                       # x_{t+1} on: copies (x_t's own s_t stays)
            groups = cycle_groups(period, e)
            live = live[period[live] == 0]
        if stops is not None and len(live):
            stop = np.asarray(stops(t, states[t].reshape(e, n, -1)[:, live].reshape(e * len(live), -1),
                                    member_weights(apart[t][:, live], model.keep), live), bool)   # (n',)
            ends[live[stop]], since[live[stop]] = t, min(t + 1, horizon)   # frozen: x_u = x_t from u = t + 1
            live = live[~stop]
        if not len(live) and t < horizon:               # every point stopped or in its cycle: no more model steps
            states[t + 1:], alive[t + 1:], apart[t + 1:] = s, alive[t], apart[t]      # the stopped: frozen, at once
            for key in steps:
                steps[key][t:] = a if key == "action" else 0
            fill_cycles(t, groups, steps, states, alive, apart)                        # the cycling: at once
            repeated = groups
            break
    for p, _, rows in repeated:             # where the cycling points stand after step k: s_k, pi(s_k)
        s[rows], a[rows] = states[horizon, rows], steps["action"][horizon - p, rows]
    if horizon:
        steps |= {"obs": states[:-1], "next_obs": states[1:]}                            # (k, E n, ds) views
    repeats = Repeats(np.tile(since, e), np.tile(np.maximum(period, 1), e)).prefix(horizon)   # None: no cycle
    if noise:       # the copies as members: (k + 1, E, R n) -> (k + 1, E R, n), the rows' order the same
        apart = apart.reshape(len(apart), e * copies, n // copies)
    return Expansion(steps, alive, s, a, apart, model.keep, None if until is None else ends, repeats=repeats,
                     close=close, copies=copies if noise else 1)


NOISE_SEED = 20260412   # the noisy rollouts' draws (``rollout``'s noise): the same every call
GOLDEN = np.uint64(0x9E3779B97F4A7C15)   # splitmix64's increment, 2^64 / phi


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (Steele, Lea and Flood 2014): a bijection of uint64 whose outputs at
    consecutive inputs x + j GOLDEN pass BigCrush, the counter-based generator below (wrapping
    arithmetic, as the algorithm has it)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def row_keys(obs: np.ndarray, action: np.ndarray, members: int, copies: int) -> np.ndarray:
    """(E R n,) uint64 the key of each row of a noisy rollout from the n points (obs (n, ds),
    action (n, da)): a hash of the point's float32 bytes, the rollout's seed and the row's member e
    and copy r (rows member-major, copy r of member e at [(e R + r) n, (e R + r + 1) n)). A point's
    key is its own: the same in any batch and call, another point's another."""
    words = np.concatenate([np.asarray(obs, np.float32), np.asarray(action, np.float32)], -1)
    words = np.ascontiguousarray(words).view(np.uint32).astype(np.uint64)                 # (n, ds + da)
    h = np.full(len(words), mix64(np.uint64(NOISE_SEED)), np.uint64)
    with np.errstate(over="ignore"):
        for column in words.T:                                   # h <- mix(h + w_j GOLDEN + GOLDEN), word by word
            h = mix64(h + (column + np.uint64(1)) * GOLDEN)
        rows = np.arange(members * copies, dtype=np.uint64)[:, None]                     # (E R, 1) e R + r
        return mix64(h[None] ^ mix64((rows + np.uint64(1)) * GOLDEN)).reshape(-1)       # (E R n,)


def noise_draws(keys: np.ndarray, t: int, ds: int) -> np.ndarray:
    """(m, ds) float32 N(0, 1) draws of the rows with ``keys`` (m,) at step t: counter-based
    (Salmon et al. 2011), each draw Box-Muller of two splitmix64 outputs at the counters
    2 (t ds + d) and 2 (t ds + d) + 1 of its row's key, so a row's draw at a step reads nothing
    but its key, t and d."""
    counter = (np.uint64(t * ds) + np.arange(ds, dtype=np.uint64)) * np.uint64(2)        # (ds,)
    with np.errstate(over="ignore"):
        z1 = mix64(keys[:, None] + (counter + np.uint64(1)) * GOLDEN)                    # (m, ds)
        z2 = mix64(keys[:, None] + (counter + np.uint64(2)) * GOLDEN)
    u1 = ((z1 >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53                   # (0, 1)
    u2 = (z2 >> np.uint64(11)).astype(np.float64) * 2.0 ** -53                           # [0, 1)
    return (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)).astype(np.float32)


CYCLE_PERIOD = 4   # the longest cycle a rollout looks for (``rollout``'s cycle)
FEWEST_ROWS = 256  # the fewest points a model step of a rollout is padded to: a few padded rows at the
#                   rollout's tail against a compilation for every smaller power of two


def batch_rows(m: int, n: int) -> int:
    """The points a model step of a rollout of n points is padded to where m of them roll: on the
    CPU a power of two, at least ``FEWEST_ROWS``, at most n; on an accelerator all n (a whole batch
    costs it no more, and each new size a compilation: on an H200, the first rollout's steps paused
    15-20 s at each, results/answer-times/h200.txt)."""
    if not on_cpu():
        return n
    return min(n, max(FEWEST_ROWS, 1 << max(m - 1, 0).bit_length()))


def cycles(t: int, scaled: np.ndarray, live: np.ndarray, e: int, tol: float, held: np.ndarray) -> np.ndarray:
    """(n',) p, the shortest cycle each rolling point ``live`` is in after step t (0: none): every
    member's state has come back within ``tol`` (over the data's scale) of its state p steps before
    at each of the last p + 1 steps. ``scaled`` (P + 1, E n, ds): the last P + 1 steps' s_t / sigma,
    step t's at t mod (P + 1); ``held`` (P + 1, n): those step counts, updated here."""
    n, every, q = scaled.shape[1] // e, len(live) == held.shape[1], min(CYCLE_PERIOD, t)
    pts = slice(None) if every else live                                                # no gather where all roll
    ring = scaled.reshape(len(scaled), e, n, -1)[:, :, pts]                            # (P + 1, E, n', ds)
    now, found = ring[t % len(scaled)], np.zeros(len(live), int)                        # (E, n', ds) (n',)
    for p in range(1, q + 1):
        far = np.sqrt(((now - ring[(t - p) % len(scaled)]) ** 2).sum(-1).max(0))   # (n',) the farthest member's
        held[p, pts] = np.where(far <= tol, held[p, pts] + 1, 0)                  # (the square root is monotone)
        found = np.where((found == 0) & (held[p, pts] >= p + 1), p, found)
    return found


Group = tuple[int, "slice | np.ndarray", "slice | np.ndarray"]
# (p, the points (n_p,) in a p-cycle, their rows (E n_p,) of E n); slices where every point is in one


def cycle_groups(period: np.ndarray, e: int) -> list[Group]:
    """The points repeating a cycle (``period`` > 0), one group per cycle length."""
    n, lengths = len(period), np.unique(period[period > 0])
    if len(lengths) == 1 and np.all(period == lengths[0]):                   # every point in one length: whole rows
        return [(int(lengths[0]), slice(None), slice(None))]
    pts = [np.flatnonzero(period == p) for p in lengths]
    return [(int(p), q, (np.arange(e)[:, None] * n + q).reshape(-1)) for p, q in zip(lengths, pts)]


def repeat_cycles(t: int, groups: list[Group], steps: dict, states: np.ndarray, alive: np.ndarray,
                  apart: np.ndarray) -> None:
    """Step t of the points repeating a p-cycle (``groups``), without the model: x_{t-1} =
    x_{t-1-p}, s_t = s_{t-p}, c_t = c_{t-1} (1 - terminated(x_{t-1})), and their members'
    distances grow by step t - p's."""
    for p, pts, rows in groups:
        for key in steps:
            steps[key][t - 1, rows] = steps[key][t - 1 - p, rows]
        states[t, rows] = states[t - p, rows]
        if "terminated" in steps:
            alive[t, rows] = alive[t - 1, rows] * (1.0 - np.clip(steps["terminated"][t - 1, rows], 0.0, 1.0))
        grow_apart(apart, t, p, pts)


def grow_apart(apart: np.ndarray, u: int, p: int, pts) -> None:
    """Step u of the members' distances of the points ``pts`` repeating a p-cycle: step u - 1's
    grown by step u - p's increment (in this order, so a step and its copies agree to the bit)."""
    apart[u][:, pts] = apart[u - 1][:, pts] + apart[u - p][:, pts] - apart[u - p - 1][:, pts]


def fill_cycles(t: int, groups: list[Group], steps: dict, states: np.ndarray, alive: np.ndarray,
                apart: np.ndarray) -> None:
    """``repeat_cycles`` at every step u = t + 1..k at once, once no point rolls: x_{u-1} and s_u
    are copies of the cycle's, x_{t+j} = x_{t-p+(j mod p)}, s_{t+1+j} = s_{t+1-p+(j mod p)}; the
    survivals their running product and the distances their running sum, in the same order."""
    for p, pts, rows in groups:
        for j in range(p):                  # every p-th step from t + 1 + j on: one step of the cycle, broadcast
            for key in steps:
                steps[key][t + j::p, rows] = steps[key][t - p + j, rows]
            states[t + 1 + j::p, rows] = states[t + 1 - p + j, rows]
        if "terminated" in steps:
            kept = 1.0 - np.clip(steps["terminated"][t:, rows], 0.0, 1.0)               # (k - t, E n_p)
            alive[t + 1:, rows] = np.multiply.accumulate(np.concatenate([alive[t, rows][None], kept]), 0)[1:]
        for v in range(t + 1, len(apart)):             # a running sum: step by step
            grow_apart(apart, v, p, pts)


def rollout_bytes(model: OneStepModel, n: int, ds: int, da: int, horizon: int) -> int:
    """What ``rollout`` keeps for n query points: every member's k + 1 states, k actions and
    predicted scalars (float32), its survival and its distance to the others (float64)."""
    per_member = (horizon + 1) * (4 * ds + 4 + 8) + horizon * 4 * (da + len(model.keys))
    return model.members * (model.copies if model.noise else 1) * n * per_member


def expand(model: OneStepModel, policy: Policy, obs: np.ndarray, action: np.ndarray, horizon: int,
           until: Until | None = None, buffers: Buffers | None = None, dynamics: Dynamics | None = None,
           steer: np.ndarray | None = None) -> Expansion:
    """The expansion's rollout: ``rollout`` with pi acting after the first step, a point in a
    cycle of the closed loop repeating it (``model.cycle``) and, with ``model.close``, answered by
    it kept up forever (``Expansion.closure``); its arrays on ``buffers`` where given, the model
    stepped at ``dynamics``' actions at the points of ``steer`` where given."""
    return rollout(model, obs, action, horizon, lambda t, s: policy(s), until, model.cycle, model.close, buffers,
                   model.noise, model.copies, dynamics, steer)


class Rollouts:
    """The longest rollout asked for at one set of query points, shared: a shorter horizon at the
    same points (from any operator holding this object) is its prefix. A rollout that would hold
    more than ``budget`` bytes is made in parts of the points (``parts``), one after another and
    not kept: every point's rollout, member weights and sums are its own, so the answers are
    those of one rollout, and each further reward rolls out again. Each rollout's arrays lie on
    ``buffers``, the memory of the rollouts it dropped (``Buffers``; at most ``budget`` bytes)."""

    def __init__(self, budget: int = ROLLOUT_BYTES):
        if budget <= 0:
            raise ValueError(f"a rollout's memory budget must be > 0 bytes, got {budget}")
        self.budget = budget
        self.buffers = Buffers(budget)
        self._last: tuple | None = None   # (tag of the model, policy and points, Expansion)

    def get(self, model: OneStepModel, policy: Policy, obs: np.ndarray, action: np.ndarray,
            horizon: int, until: Until | None = None, dynamics: Dynamics | None = None,
            steer: np.ndarray | None = None) -> Expansion:
        obs, action = np.asarray(obs, np.float32), np.asarray(action, np.float32)
        tag = (id(model.params), model.keep, model.cycle, model.noise, model.copies, model.noise_cap,
               id(model.terminal), id(policy), until, dynamics, None if steer is None else np.asarray(steer).tobytes(),
               obs.shape, action.shape, hash(obs.tobytes()), hash(action.tobytes()))
        if self._last is None or self._last[0] != tag or self._last[1].horizon < horizon:
            self._last = None             # the old rollout's memory goes before the new one is made
            self._last = (tag, expand(model, policy, obs, action, horizon, until, self.buffers, dynamics, steer))
        ex = self._last[1]
        return (ex if ex.close == model.close else replace(ex, close=model.close)).prefix(horizon)   # the same rollout

    def parts(self, model: OneStepModel, obs: np.ndarray, action: np.ndarray, horizon: int) -> list[slice]:
        """The query points in consecutive parts whose ``horizon``-step rollouts each hold at most
        ``budget`` bytes (one part where the whole fits; one point a part at least)."""
        n = len(obs)
        one = rollout_bytes(model, 1, np.shape(obs)[-1], np.shape(action)[-1], horizon)
        size = max(1, min(n, self.budget // one))
        return [slice(i, min(i + size, n)) for i in range(0, max(n, 1), size)]


def expanded_q(expansion: Expansion, reward: Callable, bootstrap: Callable[[np.ndarray, np.ndarray], np.ndarray],
               gamma: float) -> np.ndarray:
    """G_k[r] at the expansion's query points: (..., n), the leading axes those of ``bootstrap``
    (G[r] at (s_k, pi(s_k)), e.g. (S, n) for S network seeds). The reward and the operator are
    evaluated at the kept members' rows only (w_e > 0: m n of the E n rows), the others weighing 0:

        G_k[r](s, a) = sum_{e: w_e > 0} w_e (sum_{t<k} gamma^t c^e_t r(x^e_t) + gamma^k c^e_k G[r](s^e_k, pi(s^e_k)))

    with k = k_i, each point's own, where the rollout stopped points early (``Expansion.ends``), and
    at a closed row (``Expansion.closure``: a cycle repeated from before step k, with ``close``) its
    cycle kept up forever in place of gamma^k c_k G[r] (``Expansion.settled``: each distinct step's
    weight, the cycle's included): where every kept row is closed ``bootstrap`` is asked at no rows,
    for the answer's leading axes alone."""
    k, w, kept = expansion.horizon, expansion.weights, expansion.kept                  # (E, n) (m n,)
    end = expansion.row_ends[kept]                                                     # (m n,)
    if expansion.repeats is not None and k:              # the distinct steps' rewards alone, each row's first k_i
        closed, weight = expansion.settled(gamma, kept)                                # (m n,) (m n, F)
        paid = weight @ expansion.distinct_rewards(reward, "model rollout", kept)      # (m n,)
    else:
        alive = expansion.alive[:k, kept]                                              # (k, m n)
        if expansion.ends is not None:
            alive = alive * (np.arange(k)[:, None] < end)                              # the steps u < k_i only
        paid = (np.einsum("u,un,un->n", gamma ** np.arange(k), alive,
                          expansion.step_rewards(reward, "model rollout", kept)) if k else 0.0)   # (m n,)
        closed, rest = expansion.closure(reward, gamma, "model rollout", kept)         # (m n,) (m n,)
        paid = paid + rest
    ask = kept[~closed]                                 # every row closed: asked at no rows, for the leading axes
    tail = np.asarray(bootstrap(expansion.obs[ask], expansion.action[ask]), np.float64)   # (..., m n')
    q = np.zeros((*tail.shape[:-1], w.size))                                           # (..., E n)
    q[..., kept] = paid
    q[..., ask] += gamma ** end[~closed] * expansion.alive[k, ask] * tail
    return expansion.member_mean(q)                                                    # (..., n)


def along_q(expansion: Expansion, reward: Callable, bootstrap: Callable[[np.ndarray, np.ndarray], np.ndarray],
            gamma: float, at: tuple[int, ...]) -> np.ndarray:
    """Every member's G_{k-t}[r] at its own rollout's x_t, for t in ``at`` (0 <= t < k, or t = 0):
    (..., T, E n), the rest of the same rollout, given alive at t,

        G_{k-t}^e[r](x_t) = (sum_{t<=u<k} gamma^u c_u r(x_u) + gamma^k c_k G[r](s_k, pi(s_k))) / (gamma^t c_t)

    (NaN where c_t = 0). t = 0 is the member's own G_k at the query point."""
    k = expansion.horizon
    if expansion.ends is not None:
        raise ValueError("the rest of a rollout is asked of one whose points stop at their own steps")
    if any(not 0 <= t < max(k, 1) for t in at):
        raise ValueError(f"rollout steps of a {k}-step expansion are 0 to {max(k - 1, 0)}, got {at}")
    tail = np.asarray(bootstrap(expansion.obs, expansion.action), np.float64)          # (..., E n)
    t = np.asarray(at)
    paid = np.zeros((len(t), tail.shape[-1]))              # (T, E n) sum_{u>=t} gamma^u c_u r_u
    if k and len(t) == 1:                # one suffix's sum (the distillation's t = 0), without a (k, E n) temporary
        r = expansion.step_rewards(reward, "model rollout")                            # (k, E n)
        paid[0] = np.einsum("u,un,un->n", gamma ** np.arange(t[0], k), expansion.alive[t[0]:k], r[t[0]:])
    elif k:
        paid = np.cumsum(expansion.discounted_rewards(reward, gamma, "model rollout")[::-1], 0)[::-1][t]
    alive = expansion.alive[t]                                                         # (T, E n)
    closed, rest = expansion.closure(reward, gamma, "model rollout", np.arange(alive.shape[1]))   # (E n,) (E n,)
    after = np.where(closed, rest, gamma ** k * expansion.alive[k] * tail)             # (..., E n)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (paid + after[..., None, :]) / (gamma ** t[:, None] * alive)
    return np.where(alive > 0, q, np.nan)                                              # (..., T, E n)
