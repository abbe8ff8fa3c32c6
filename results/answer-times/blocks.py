"""The networks an answer at many points runs, on all the rows at once (the code before
``resolvent/blocks.py``) against in blocks of rows (``in_blocks``, now the package's), side by
side in one process: warm medians of 10 calls at the README main job's 1e4 dataset points
(Pendulum-Angle expert, favor, seed 0), and the largest difference between the two answers.

    python results/answer-times/blocks.py runs/main-job-7 > results/answer-times/blocks.txt
"""
from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import resolvent
from resolvent.algorithms.onestep import _apply
from resolvent.operators.networks import MLP
from resolvent.policies.actor import _act, act, load_target_policy


def ms(fn, repeats: int = 10) -> tuple[float, np.ndarray]:
    """Median wall milliseconds of ``fn()`` over ``repeats`` calls after one, and its value."""
    out = np.asarray(jax.block_until_ready(fn()))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a finished evaluate run of Pendulum-Angle (the README's main job)")
    ap.add_argument("--points", type=int, default=10_000)
    args = ap.parse_args()
    model = resolvent.load(args.run, "favor+k30")
    ob, actor = model.onestep, load_target_policy(model.family)      # the run's one-step model, the family's pi
    rng = np.random.default_rng(0)
    e, n = ob.members, args.points
    obs = jnp.asarray(rng.uniform(ob.low, ob.high, (n, len(ob.low))), jnp.float32)        # (n, ds)
    states = jnp.tile(obs, (e, 1))                                                          # (E n, ds): a rollout step
    x = (jnp.concatenate([states, jnp.asarray(actor(np.asarray(states)))], -1) - ob.x_mean) / ob.x_std
    xe = x.reshape(e, n, -1)                                                                # (E, n, dx)
    layers, low, high = actor.on_device
    whole_pi = jax.jit(_act)
    out = int(np.shape(ob.params["params"][f"Dense_{len(ob.hidden)}"]["bias"])[-1])
    whole_model = jax.jit(jax.vmap(MLP(ob.hidden, out).apply, (0, 0)))
    enc = model.encode([lambda f: jnp.cos(f["obs"][:, 0])])
    xq = model.normalise(np.asarray(obs), np.asarray(actor(np.asarray(obs))))
    summary = model._summary(model.params, model._keys, enc)
    net = model.network
    whole_answer = jax.jit(jax.vmap(lambda p, x, sm: net.apply(p, x, sm, method=lambda m, a, b: m.answer(a, b)),
                                    in_axes=(0, None, 0)))
    cases = [
        (f"pi, {e} x {n} member states", lambda: whole_pi(layers, low, high, states),
         lambda: act(layers, low, high, states)),
        (f"one-step ensemble, {e} members x {n}", lambda: whole_model(ob.params, xe),
         lambda: _apply(ob.hidden, ob.params, xe, "own")),
        (f"favor's forward pass, {model.n_seeds} seeds x {n}", lambda: whole_answer(model.params, xq, summary),
         lambda: model._answer(model.params, xq, summary)),
    ]
    print(f"{'network':40s} {'all rows ms':>12s} {'in blocks ms':>13s} {'speed-up':>9s} {'max |diff|':>11s}")
    for name, whole, blocked in cases:
        t_whole, a = ms(whole)
        t_blocks, b = ms(blocked)
        print(f"{name:40s} {t_whole:12.1f} {t_blocks:13.1f} {t_whole / t_blocks:8.2f}x {np.abs(a - b).max():11.2g}")


if __name__ == "__main__":
    main()
