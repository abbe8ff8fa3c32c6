"""The expansion at many query points on Ant-Dir: what one rollout would hold, and the answer made in
parts of the points (``Rollouts.parts``) within ``ROLLOUT_BYTES``, its peak memory and time; then
the answers in parts against one rollout at fewer points.

A one-step ensemble of today's default shape (five 256-256 members, three kept) fitted briefly on
Ant-Dir's replay data (memory and time do not depend on how well it fits), the shipped target
policy, a family reward (it reads the predicted ``x_velocity`` and ``y_velocity``) at k = 400 from
dataset state-actions. The operator's tail at s_k is left out (zero): it is one forward pass at
the same points either way. The peak memory holds one part's rollout and one chunk of its steps'
reward inputs (``expansion.REWARD_BYTES``), converted to JAX arrays (copies; Ant-Dir's family
reward reads ``next_obs``).

    python results/answer-times/rollout_parts.py > results/answer-times/rollout-parts.txt
"""
from __future__ import annotations

import argparse
import resource
import time

import jax
import numpy as np

from resolvent.algorithms import onestep
from resolvent.algorithms.expansion import ROLLOUT_BYTES, STATES, Rollouts, expand, expanded_q, rollout_bytes
from resolvent.data.dataset import load_transitions
from resolvent.families import get_family
from resolvent.policies.actor import load_target_policy


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20     # kB -> GB


def answer(model, policy, reward, obs, act, k: int, rollouts: Rollouts) -> np.ndarray:
    """G_k[r] with a zero tail, part by part as ``OperatorModel.q_values`` does: (n,)."""
    zero = lambda s, a: np.zeros((1, len(s)))  # noqa: E731
    return np.concatenate([expanded_q(expand(model, policy, obs[p], act[p], k), reward, zero, 0.99)[0]
                           for p in rollouts.parts(model, obs, act, k)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--horizon", type=int, default=400)
    ap.add_argument("--check-points", type=int, default=600)
    args = ap.parse_args()
    family = get_family("ant-dir")
    data = load_transitions(family, "replay")
    feats = {k: np.asarray(v) for k, v in data.items()}
    x = np.concatenate([feats["obs"], feats["action"]], 1)
    model = onestep.fit(onestep.OneStepConfig(steps=200), jax.random.PRNGKey(0), feats, x.mean(0),
                        x.std(0) + 1e-6)
    policy = load_target_policy("ant-dir")
    reward = family.reward_callable(0.5)
    idx = np.random.default_rng(0).choice(len(x), args.points, replace=False)
    obs, act = feats["obs"][idx].astype(np.float32), feats["action"][idx].astype(np.float32)
    n, ds, da, k = len(obs), obs.shape[1], act.shape[1], args.horizon
    kept = rollout_bytes(model, n, ds, da, k)
    twice = kept + model.members * n * k * 4 * ds          # next_obs stored apart from obs, as before
    parts = Rollouts().parts(model, obs, act, k)
    print(f"Ant-Dir: ds {ds}, da {da}, {len(model.keys)} predicted scalars, {model.members} members, "
          f"k = {k}, {n} points")
    print(f"one rollout at every point: {twice / 2 ** 30:.1f} GiB with next_obs stored apart (before), "
          f"{kept / 2 ** 30:.1f} GiB with the states kept once ({', '.join(STATES)} views)")
    print(f"ROLLOUT_BYTES {ROLLOUT_BYTES / 2 ** 30:.1f} GiB: {len(parts)} parts of up to "
          f"{parts[0].stop - parts[0].start} points")
    before = peak_gb()
    t0 = time.perf_counter()
    q = answer(model, policy, reward, obs, act, k, Rollouts())
    print(f"answer in parts: {time.perf_counter() - t0:.1f} s, peak RSS {before:.2f} GiB before -> "
          f"{peak_gb():.2f} GiB (finite: {bool(np.isfinite(q).all())})")
    m = args.check_points
    whole = answer(model, policy, reward, obs[:m], act[:m], k, Rollouts(2 ** 62))
    small = Rollouts(rollout_bytes(model, m // 3, ds, da, k))
    parted = answer(model, policy, reward, obs[:m], act[:m], k, small)
    print(f"{m} points, one rollout against {len(small.parts(model, obs[:m], act[:m], k))} parts: "
          f"max |diff| {np.abs(parted - whole).max():.2e} (answers up to {np.abs(whole).max():.1f})")


if __name__ == "__main__":
    main()
