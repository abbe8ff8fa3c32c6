"""Update-step throughput of operator DQN and operator BCQ: max-out against one operator.

    python benchmarks/control_throughput.py [--steps 50] [--reps 3] [--tasks dqn,bcq] [--tiny]

Operator DQN, Pendulum dimensions (ds = 3, 11 grid actions), batch 256, m = 128, all 32
training rewards per step, K = 8. The target needs every next action for every reward and
every copy; rows compared (one JSON line each, ``steps_per_s``, and ``relative`` to the
single attention operator):

- ``attention``: ONE attention operator (the cost the max-out must stay close to);
- ``maxout``: the library's max-out (K copies share their hidden layers, attention weights
  computed once and applied to every reward);
- ``maxout-separate``: K independent attention operators (``nn.vmap``), the naive max-out;
- ``vanilla``: the vanilla DeepONet baseline.

Operator BCQ, Ant dimensions (ds = 105, da = 8): one step (VAE, twin critics, actor) with
max-out and with vanilla critics.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import flax.linen as nn
import jax
import jax.numpy as jnp

from resolvent.algorithms import bcq, dqn
from resolvent.operators import AttentionOperator, make_network

B, M, R, K, HIDDEN, FEATURES, N = 256, 128, 32, 8, (256, 256), 64, 20_000


class SeparateMaxOut(nn.Module):
    """The naive max-out: K independent attention operators, max over their outputs."""

    gamma: float = 0.99
    heads: int = K

    @nn.compact
    def __call__(self, x, xi, r_xi, paired: bool = False):
        copies = nn.vmap(AttentionOperator, variable_axes={"params": 0}, split_rngs={"params": True},
                         in_axes=None, out_axes=0, axis_size=self.heads)
        return copies(self.gamma, HIDDEN, FEATURES)(x, xi, r_xi).max(0)        # (b, R)


def timed(train, state, data, seeds: int, steps: int, reps: int) -> float:
    """Median seed-steps per second of ``train`` (after one compile call)."""
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    state, loss = train(state, data, keys)
    jax.block_until_ready(loss)
    rates = []
    for i in range(reps):
        keys = jax.random.split(jax.random.PRNGKey(i + 1), seeds)
        t0 = time.perf_counter()
        state, loss = train(state, data, keys)
        jax.block_until_ready(loss)
        rates.append(steps * seeds / (time.perf_counter() - t0))
    return statistics.median(rates)


def bench_dqn(name: str, steps: int, reps: int, seeds: int, n_actions: int = 11) -> float:
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    ds, da = 3, 1
    data = dqn.DQNData(x=jax.random.normal(k[0], (N, ds + da)), next_s=jax.random.normal(k[1], (N, ds)),
                       actions=jnp.linspace(-1.7, 1.7, n_actions)[:, None],
                       rewards=jax.random.normal(k[2], (R, N)), done=jnp.zeros(N),
                       xi=jax.random.normal(k[3], (M, ds + da)), enc=jax.random.normal(k[4], (R, M)))
    if name == "attention":
        network = AttentionOperator(0.99, HIDDEN, FEATURES)
    elif name == "maxout-separate":
        network = SeparateMaxOut()
    else:
        network = make_network(name, 0.99, HIDDEN, FEATURES, 0, heads=K)
    config = dqn.DQNConfig(batch_size=B)
    state = dqn.make_initializer(network, config)(jax.random.split(k[5], seeds), data)
    return timed(dqn.make_trainer(network, config, steps), state, data, seeds, steps, reps)


def bench_bcq(name: str, steps: int, reps: int, seeds: int) -> float:
    k = jax.random.split(jax.random.PRNGKey(0), 6)
    ds, da = 105, 8
    data = bcq.BCQData(s=jax.random.normal(k[0], (N, ds)), a=jnp.tanh(jax.random.normal(k[1], (N, da))),
                       next_s=jax.random.normal(k[2], (N, ds)), rewards=jax.random.normal(k[3], (R, N)),
                       done=jnp.zeros(N), xi=jax.random.normal(k[4], (M, ds + da)),
                       enc=jax.random.normal(k[5], (R, M)), a_shift=jnp.zeros(da), a_scale=jnp.ones(da))
    config = bcq.BCQConfig(batch_size=B)
    nets = bcq.make_nets(make_network(name, 0.99, HIDDEN, FEATURES, 0, heads=K), da, config)
    state = bcq.make_initializer(nets, config)(jax.random.split(k[0], seeds), data)
    return timed(bcq.make_trainer(nets, config, steps), state, data, seeds, steps, reps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--tasks", default="dqn,bcq")
    ap.add_argument("--tiny", action="store_true",
                    help="smoke sizes (2 steps, 1 rep; the attention and max-out rows): checks the script, "
                         "not the numbers")
    args = ap.parse_args()
    dqn_rows, bcq_rows = ("attention", "maxout", "maxout-separate", "vanilla"), ("maxout", "vanilla")
    if args.tiny:
        args.steps, args.reps, args.seeds = 2, 1, 1
        dqn_rows, bcq_rows = dqn_rows[:2], bcq_rows[:1]
    device = jax.devices()[0].device_kind
    if "dqn" in args.tasks:
        base = None
        for name in dqn_rows:
            sps = bench_dqn(name, args.steps, args.reps, args.seeds)
            base = base or sps
            print(json.dumps({"task": "dqn", "network": name, "steps_per_s": round(sps, 1),
                              "relative": round(sps / base, 3), "K": K, "actions": 11,
                              "seeds": args.seeds, "device": device}), flush=True)
    if "bcq" in args.tasks:
        for name in bcq_rows:
            sps = bench_bcq(name, args.steps, args.reps, args.seeds)
            print(json.dumps({"task": "bcq", "critic": name, "steps_per_s": round(sps, 1),
                              "seeds": args.seeds, "device": device, "dims": "ant (105, 8)"}),
                  flush=True)


if __name__ == "__main__":
    main()
