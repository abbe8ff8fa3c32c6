"""Where an answer rests on actions the data never took near the asked state.

Past the query's own first step every answer here is the target policy's: the operators of the
policy encoding read a reward at (s', pi(s')) through the one-step model of the data, the
expansions roll that model out under pi, per-reward FQE backs up Q(s', pi(s')). Where pi's action
at a state is far from every action the data took at states like it, all of them are asked what
an action nobody tried there does: the model guesses (on HalfCheetah-Vel replay it rights
upside-down cheetahs that pi cannot right, results/accuracy/horizon/per-point/). A signal without
ground truth for those states:

    d_K(s) = min_{j in NN_K(s)} || pi(s) - a_j ||

NN_K(s) the K states of the data nearest s (each state dimension in the data's std units), a_j
the action the data took at state j. Its scale is the data's own, two of them: m_K, the median
over data states of the same distance for the data's own action there (its action a_i against the
actions at its K nearest other states: how closely the data covers an action it takes, whatever pi
does), and s_A, the median distance between two of the data's actions (its action space's size;
in one action dimension m_K is near 0), so

    T = max(ratio * m_K, spread * s_A),   rho(s) = d_K(s) / T,   s unsupported where rho(s) > 1

Measured (``results/accuracy/support/``): on HalfCheetah-Vel replay 6 of 64 dataset points are
unsupported (rho 1.2-2.1; 68 of 512 on a second run), mostly upside-down cheetahs, and hold 54%
(69%) of the default answer's error; the median rho there is 0.3; on HalfCheetah-Vel expert,
Ant-Dir expert and Pendulum-Angle medium no point of any kind is.

``ActionSupport`` holds a sample of the data's states and actions, m_K, s_A and the rule (saved
beside a run's models, ``support.npz``); ``check`` answers for any points. Pure numpy.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from resolvent.io import atomic_savez

BLOCK = 256       # query points per distance block: (BLOCK, n) distances at a time
TINY = 1e-12      # the least T: data that took one action everywhere supports that action alone


@dataclass(frozen=True)
class SupportConfig:
    """The action-support check (``evaluation/support.py``), made once per run from its data."""

    sample: int = 20_000       # data transitions the check compares with (all where the data has fewer)
    neighbours: int = 100      # K: the data states nearest a point whose actions pi's is compared with
    calibration: int = 512     # data states where the data's own action's d_K is measured (its median m_K),
    #                            and pairs of the data's actions whose distances' median is s_A
    ratio: float = 3.0         # a point is unsupported where d_K exceeds this many times that median
    spread: float = 0.5        # ... and this fraction of the median distance between two of the data's actions
    dynamics: bool = False     # a point whose own pi(s) is unsupported: its expansions' one-step model stepped at the
    #                            data's nearest actions (``ActionSupport.supported``), the rewards still reading pi's

    def __post_init__(self):
        for name in ("sample", "neighbours", "calibration"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"support.{name} must be an integer >= 1, got {v!r}")
        if self.neighbours >= self.sample:
            raise ValueError(f"support.neighbours ({self.neighbours}) must be below support.sample ({self.sample})")
        for name in ("ratio", "spread"):
            if not 0 <= getattr(self, name) < float("inf"):
                raise ValueError(f"support.{name} must be >= 0 and finite, got {getattr(self, name)!r}")
        if not (self.ratio or self.spread):
            raise ValueError("support.ratio and support.spread are both 0: every point would be unsupported")


@dataclass(frozen=True)
class SupportCheck:
    """The check at b points."""

    distance: np.ndarray      # (b,) d_K: pi's action to the nearest action the data took at the K nearest states
    relative: np.ndarray      # (b,) rho = d_K / T
    unsupported: np.ndarray   # (b,) rho > 1
    threshold: float          # T = max(ratio * m_K, spread * s_A)
    neighbours: int           # K

    def summary(self) -> str:
        """One line: how many points are unsupported, which (the first ten) and why."""
        bad = np.flatnonzero(self.unsupported)
        which = ", ".join(map(str, bad[:10])) + (", ..." if len(bad) > 10 else "")
        head = (f"{len(bad)} of {len(self.unsupported)} points" + (f" ({which})" if len(bad) else ""))
        return (f"{head} rest on actions the data never took near them: pi's action there is farther than "
                f"{self.threshold:.3g} from every action the data took at the {self.neighbours} nearest data states")


@dataclass(frozen=True)
class ActionSupport:
    """A sample of the data's states and actions, its scales m_K and s_A and the rule."""

    obs: np.ndarray           # (n, ds) the data's states
    actions: np.ndarray       # (n, da) the actions the data took there
    scale: np.ndarray         # (ds,) the state dimensions' unit (the data's std; 1 where it is constant)
    unit: float               # m_K: the median d_K of the data's own actions at its states
    action_spread: float      # s_A: the median distance between two of the data's actions
    neighbours: int           # K
    ratio: float              # T = max(ratio * m_K, spread * s_A): m_K's factor
    spread: float             # s_A's factor
    dynamics: bool = False    # the expansions from unsupported points step the one-step model at ``supported``'s

    @property
    def threshold(self) -> float:
        """T: a point is unsupported where d_K exceeds it."""
        return max(self.ratio * self.unit, self.spread * self.action_spread, TINY)

    def distances(self, obs, pi_actions, exclude: np.ndarray | None = None) -> np.ndarray:
        """d_K (b,) at states ``obs`` (b, ds) of pi's actions ``pi_actions`` (b, da); ``exclude`` (b,):
        a sample row each point is not compared with (itself, when the points are the sample's)."""
        return self._nearest(*self._points(obs, pi_actions), exclude)[0]

    def supported(self, obs, actions) -> np.ndarray:
        """The actions (b, da) at states ``obs`` (b, ds), each unsupported one (d_K > T) replaced by
        the action the data took at the K nearest data states that is nearest to it; the others
        as they are. The expansions' one-step model steps at these with ``dynamics`` (a per-reward
        FQE bootstraps from the data's own next states: the model's analogue)."""
        obs, actions = self._points(obs, actions, "rollout's")
        d, nearest = self._nearest(obs, actions)
        return np.where((d > self.threshold)[:, None], nearest, actions)

    def _nearest(self, obs: np.ndarray, pi_actions: np.ndarray,
                 exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """d_K (b,) and the data's action (b, da) it is the distance to."""
        z = (self.obs / self.scale).astype(np.float64)                          # (n, ds)
        q = (obs / self.scale).astype(np.float64)                               # (b, ds)
        zz, zt = (z ** 2).sum(1), z.T                                           # (n,), (ds, n)
        out, at = np.empty(len(q)), np.empty_like(pi_actions)
        for s in range(0, len(q), BLOCK):
            qb = q[s:s + BLOCK]                                                 # (c, ds)
            dist = zz[None] - 2 * qb @ zt                                       # (c, n) squared, less ||q||^2
            if exclude is not None:
                dist[np.arange(len(qb)), exclude[s:s + BLOCK]] = np.inf
            near = np.argpartition(dist, self.neighbours - 1, axis=1)[:, :self.neighbours]   # (c, K)
            taken = self.actions[near]                                          # (c, K, da)
            gap = np.sqrt(((taken - pi_actions[s:s + BLOCK, None]).astype(np.float64) ** 2).sum(2))   # (c, K)
            j = gap.argmin(1)                                                   # (c,)
            out[s:s + BLOCK], at[s:s + BLOCK] = gap[np.arange(len(j)), j], taken[np.arange(len(j)), j]
        return out, at

    def check(self, obs, pi_actions) -> SupportCheck:
        """The check at states ``obs`` (b, ds) with pi's actions there (b, da)."""
        d = self.distances(obs, pi_actions)
        rel = d / self.threshold
        return SupportCheck(d, rel, rel > 1, self.threshold, self.neighbours)

    def _points(self, obs, pi_actions, whose: str = "target policy's") -> tuple[np.ndarray, np.ndarray]:
        obs, pi_actions = np.asarray(obs, np.float32), np.asarray(pi_actions, np.float32)
        ds, da = self.obs.shape[1], self.actions.shape[1]
        if obs.ndim != 2 or obs.shape[1] != ds:
            raise ValueError(f"the support check needs observations (b, {ds}), got shape {obs.shape}")
        if pi_actions.shape != (len(obs), da):
            raise ValueError(f"the support check needs the target policy's actions ({len(obs)}, {da}) at the "
                             f"points, got shape {pi_actions.shape}")
        for name, v in (("observations", obs), (f"{whose} actions", pi_actions)):
            if not np.isfinite(v).all():
                raise ValueError(f"the support check's {name} are not all finite")
        return obs, pi_actions

    def save(self, path: str | Path) -> None:
        atomic_savez(path, obs=self.obs, actions=self.actions, scale=self.scale, unit=self.unit,
                     action_spread=self.action_spread, neighbours=self.neighbours, ratio=self.ratio,
                     spread=self.spread, dynamics=self.dynamics)

    @classmethod
    def load(cls, path: str | Path) -> "ActionSupport":
        """From ``save``'s file; a damaged one raises (the caller names it)."""
        with np.load(path) as z:
            return cls(z["obs"], z["actions"], z["scale"], float(z["unit"]), float(z["action_spread"]),
                       int(z["neighbours"]), float(z["ratio"]), float(z["spread"]),
                       bool(z["dynamics"]) if "dynamics" in z.files else False)   # saved before it: off


def build_support(obs, actions, scale, config: SupportConfig, seed: int) -> ActionSupport:
    """The check of a dataset: ``config.sample`` of its transitions (states ``obs`` (N, ds), the
    actions taken ``actions`` (N, da); drawn with ``seed``), ``scale`` (ds,) the state unit, m_K
    the median d_K of the data's own actions at ``config.calibration`` of the sample's states, each
    compared with the rest of the sample; s_A over as many pairs of the sample's actions. The
    target policy is not read: the scales are the data's alone."""
    obs, actions = np.asarray(obs, np.float32), np.asarray(actions, np.float32)
    if len(obs) <= config.neighbours:
        raise ValueError(f"the support check compares with support.neighbours = {config.neighbours} data states; "
                         f"the data has {len(obs)} transitions: lower support.neighbours")
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(obs), min(len(obs), config.sample), replace=False))        # (n,)
    scale = np.where(np.asarray(scale, np.float32) > 0, np.asarray(scale, np.float32), 1.0)
    draft = ActionSupport(obs[rows], actions[rows], scale, 1.0, 1.0, config.neighbours, config.ratio, config.spread)
    cal = np.sort(rng.choice(len(rows), min(len(rows), config.calibration), replace=False))   # (c,)
    d = draft.distances(draft.obs[cal], draft.actions[cal], exclude=cal)                      # (c,)
    i, j = rng.choice(len(rows), (2, config.calibration))                                      # (c,) pairs
    s_a = float(np.median(np.linalg.norm(draft.actions[i] - draft.actions[j], axis=1)))
    return ActionSupport(draft.obs, draft.actions, scale, float(np.median(d)), s_a, config.neighbours,
                         config.ratio, config.spread, config.dynamics)
