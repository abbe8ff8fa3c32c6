"""Update-step throughput of every operator network, against a plain PyTorch reference.

    python benchmarks/throughput.py [--family pendulum-angle] [--steps 200] [--reps 5] [--seeds 1,3] [--tiny]

Paper configuration: batch 256, m = 128 reference points, 32 rewards per step, the family's
dimensions (dx = obs + action: Pendulum 3 + 1, HalfCheetah 17 + 6, Ant 105 + 8). Prints one
JSON line per network (``method``, ``steps_per_s``), the machine's float32 matmul rate
measured in the same run (1024-square, and the step's own largest matmul, 256 rows through a
256x256 layer), the attention step's FLOP count, its fraction of the matmul rate and its
ceiling (layer rate / FLOPs), and, when torch is installed, the PyTorch eager reference
(``../shared/bench/torch_reference.py``) run in the same run with the ratios to it.
"""
from __future__ import annotations

import os

# expose every core as an XLA host device, so one network's step can split its batch across
# them (make_parallel_trainer); set before JAX starts. Other rows run on one device as usual.
os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count()}")

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import jax
import jax.numpy as jnp

from resolvent.algorithms import FQEConfig, OperatorData, identity_encodings, make_initializer, make_trainer
from resolvent.algorithms.fqe import make_parallel_trainer
from resolvent.families import get_family
from resolvent.operators import make_network

B, M, R, HIDDEN, FEATURES = 256, 128, 32, (256, 256), 64
REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "torch_reference.py"


def mlp_flops(rows: int, sizes: list[int], input_grad: bool) -> tuple[int, int]:
    """(forward, backward) FLOPs of a dense MLP on ``rows`` rows."""
    fwd = sum(2 * rows * a * b for a, b in zip(sizes[:-1], sizes[1:]))
    # backward: weight grads for every layer, input grads for all but (optionally) the first
    bwd = 2 * fwd - (0 if input_grad else 2 * rows * sizes[0] * sizes[1])
    return fwd, bwd


def attention_step_flops(dx: int, b: int = B, m: int = M, r: int = R) -> int:
    """FLOPs of one attention-operator FQE step (online fwd+bwd, target fwd; matmuls only)."""
    sizes = [dx, *HIDDEN, FEATURES]
    f_fwd, f_bwd = mlp_flops(m, sizes, False)
    g_fwd, g_bwd = mlp_flops(b, sizes, False)
    head = 2 * b * m * FEATURES + 2 * b * m * r          # logits, weights @ rewards
    online = f_fwd + g_fwd + head + f_bwd + g_bwd + 2 * head
    target = f_fwd + g_fwd + head
    return online + target


def matmul_rate(n: int = 1024, reps: int = 20) -> float:
    """Sustained float32 matmul FLOP/s of this machine through XLA."""
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n), jnp.float32)
    f = jax.jit(lambda a: a @ a)
    f(a).block_until_ready()
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            out = f(a)
        out.block_until_ready()
        rates.append(2 * n**3 * reps / (time.perf_counter() - t0))
    return statistics.median(rates)


def layer_matmul_rate(rows: int = B, width: int = HIDDEN[0], chain: int = 100, reps: int = 20) -> float:
    """Sustained float32 FLOP/s of the step's own largest matmul, (rows, width) @ (width, width),
    chained inside one jitted loop (no dispatch per matmul). The step's matmuls are this size or
    smaller, so rate / step FLOPs is a practical ceiling on its steps per second (for any
    implementation of the same math at this precision)."""
    a = jax.random.normal(jax.random.PRNGKey(0), (rows, width), jnp.float32)
    w = jax.random.normal(jax.random.PRNGKey(1), (width, width), jnp.float32) / width**0.5
    f = jax.jit(lambda a, w: jax.lax.fori_loop(0, chain, lambda i, c: jnp.tanh(c @ w), a))
    f(a, w).block_until_ready()
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            out = f(a, w)
        out.block_until_ready()
        rates.append(2 * rows * width * width * chain * reps / (time.perf_counter() - t0))
    return statistics.median(rates)


def bench_method(method: str, dx: int, steps: int, reps: int, seeds: int, parallel: bool = False) -> float:
    """Median optimiser steps per second (per seed-step, summed over vmapped seeds)."""
    key = jax.random.PRNGKey(0)
    k = jax.random.split(key, 8)
    n = 20_000
    enc = identity_encodings(R) if method == "sf" else jax.random.normal(k[0], (R, M))
    data = OperatorData(x=jax.random.normal(k[1], (n, dx)), xn=jax.random.normal(k[2], (n, dx)),
                        rewards=jax.random.normal(k[3], (R, n)), done=jnp.zeros(n),
                        xi=jax.random.normal(k[4], (M, dx)), enc=enc)
    network = make_network(method, 0.99, HIDDEN, FEATURES, R)
    config = FQEConfig(batch_size=B)
    keys = jax.random.split(k[5], seeds)
    state = make_initializer(network, config)(keys, data)
    train = (make_parallel_trainer if parallel else make_trainer)(network, config, steps)
    state, loss = train(state, data, keys)
    loss.block_until_ready()
    rates = []
    for i in range(reps):
        keys = jax.random.split(jax.random.PRNGKey(i + 1), seeds)
        t0 = time.perf_counter()
        state, loss = train(state, data, keys)
        loss.block_until_ready()
        rates.append(steps * seeds / (time.perf_counter() - t0))
    return statistics.median(rates)


def family_dx(name: str) -> int:
    env = gym.make(get_family(name).env_id)
    return env.observation_space.shape[0] + env.action_space.shape[0]


def torch_reference(dx: int) -> float | None:
    if not REFERENCE.is_file():
        return None
    try:
        import torch  # noqa: F401 - optional: the reference runs only where torch is installed
    except ImportError:
        return None
    out = subprocess.run([sys.executable, str(REFERENCE), "--dx", str(dx), "--rewards", str(R)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="pendulum-angle",
                    help="comma-separated families; each sets dx to its obs + action dims, and "
                         "the attention rows' share of the matmul rate is compared to the first's")
    ap.add_argument("--dx", type=int, default=None, help="overrides the (single) family's input dimension")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seeds", default="1,3",
                    help="comma-separated seed counts; seeds train at once (vmapped), as in "
                         "`resolvent evaluate`, and steps_per_s counts seed-steps")
    ap.add_argument("--methods", default="attention,linear,vanilla,sf")
    ap.add_argument("--tiny", action="store_true",
                    help="smoke sizes (2 steps, 1 rep, 1 seed, small matmuls, no torch reference): "
                         "checks the script, not the numbers")
    args = ap.parse_args()
    if args.tiny:
        args.steps, args.reps, args.seeds = 2, 1, "1"
    rate, layer_rate = (matmul_rate(128, 2), layer_matmul_rate(chain=2, reps=2)) if args.tiny \
        else (matmul_rate(), layer_matmul_rate())
    print(json.dumps({"machine_matmul_gflops": round(rate / 1e9, 1),
                      "layer_matmul_gflops": round(layer_rate / 1e9, 1),
                      "layer": f"({B}, {HIDDEN[0]}) @ ({HIDDEN[0]}, {HIDDEN[0]})"}), flush=True)
    fractions: dict[tuple, dict[str, float]] = {}
    for family in args.family.split(","):
        dx = args.dx if args.dx is not None else family_dx(family)
        flops, reference = attention_step_flops(dx), None if args.tiny else torch_reference(dx)
        for method in args.methods.split(","):
            for seeds in (int(s) for s in args.seeds.split(",")):
                for parallel in (False, True) if seeds == 1 and jax.local_device_count() > 1 else (False,):
                    row = bench_row(method, seeds, family, dx, args, rate, flops, reference, parallel,
                                    layer_rate)
                    print(json.dumps(row), flush=True)
                    if method == "attention":
                        fractions.setdefault((seeds, row["devices"]), {})[family] = row["fraction_of_matmul_rate"]
    first = args.family.split(",")[0]
    for (seeds, devices), by_family in fractions.items():
        for family, frac in by_family.items():
            if family != first and by_family.get(first):
                print(json.dumps({"compare": "fraction_of_matmul_rate", "seeds": seeds, "devices": devices,
                                  "family": family, "vs": first,
                                  "ratio": round(frac / by_family[first], 3)}), flush=True)


def bench_row(method, seeds, family, dx, args, rate, flops, reference, parallel=False,
              layer_rate=None) -> dict:
    sps = bench_method(method, dx, args.steps, args.reps, seeds, parallel)
    row = {"method": method, "steps_per_s": round(sps, 1), "family": family, "dx": dx,
           "seeds": seeds, "devices": jax.local_device_count() if parallel else 1}
    if method == "attention":
        row.update({"step_gflop": round(flops / 1e9, 4),
                    "machine_matmul_gflops": round(rate / 1e9, 1),
                    "fraction_of_matmul_rate": round(sps * flops / rate, 3)})
        if layer_rate is not None:
            # a practical ceiling: every FLOP of the step at the layer matmul's rate
            row["ceiling_steps_per_s"] = round(layer_rate / flops, 1)
        if reference is not None:
            row.update({"torch_eager_steps_per_s": reference,
                        "ratio_to_torch": round(sps / reference, 2)})
            if layer_rate is not None:
                row["ceiling_ratio_to_torch"] = round(layer_rate / flops / reference, 2)
    return row


if __name__ == "__main__":
    main()
