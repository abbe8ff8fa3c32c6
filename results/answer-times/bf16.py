"""Would bfloat16 matrix products halve the rollout's networks? Measured: no, on this CPU under
XLA they are slower than float32.

    python results/answer-times/bf16.py > results/answer-times/bf16.txt

The default's answer at new points spends about half its time in two 256-256 networks (the
one-step model and pi) over the rollout's rows (``rollout-rows.txt``). This CPU (AMD EPYC) has
avx512_bf16, so bfloat16 weights and activations might have halved that. The same 256-256 MLP
as the one-step model's (input 4, output 3, random weights), in blocks of ``blocks.ROWS`` rows
as the rollout applies it (``resolvent.blocks.in_blocks``) and on all rows at once, float32
against bfloat16 (inputs cast in, outputs cast back), at the rollout's row counts: one member's
1e4 points and all five members' 5e4 rows. Median of 20 warm calls, both in one process.
"""
from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

from resolvent.blocks import ROWS, in_blocks

SIZES = (4, 256, 256, 3)


def mlp(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def median_ms(f, *args, repeats: int = 20) -> float:
    jax.block_until_ready(f(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    f32 = [(jnp.asarray(rng.normal(size=(a, b)) / np.sqrt(a), jnp.float32), jnp.zeros(b, jnp.float32))
           for a, b in zip(SIZES, SIZES[1:])]
    bf16 = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), f32)
    as_bf16 = lambda p, x: mlp(p, x.astype(jnp.bfloat16)).astype(jnp.float32)  # noqa: E731
    print(f"device: {jax.devices()[0].device_kind}; a {'-'.join(map(str, SIZES))} MLP, median of 20 warm calls")
    print(f"{'rows':>7} {'how':>10} {'float32 ms':>11} {'bfloat16 ms':>12} {'bf16/f32':>9} {'max |diff|':>11}")
    for n in (10_000, 50_000):
        x = jnp.asarray(rng.normal(size=(n, SIZES[0])), jnp.float32)
        for how, wrap in (("blocks", lambda f: in_blocks(f, ROWS, arg=1)), ("whole", lambda f: f)):
            a, b = jax.jit(wrap(mlp)), jax.jit(wrap(as_bf16))
            ta, tb = median_ms(a, f32, x), median_ms(b, bf16, x)
            diff = float(jnp.abs(a(f32, x) - b(bf16, x)).max())
            print(f"{n:>7} {how:>10} {ta:>11.2f} {tb:>12.2f} {tb / ta:>9.2f} {diff:>11.4f}")


if __name__ == "__main__":
    main()
