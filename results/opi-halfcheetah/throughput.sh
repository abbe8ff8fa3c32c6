#!/bin/bash
# Operator BCQ on HalfCheetah-Vel expert (max-out, 1 seed, 600 steps, an evaluation every 300):
# one process alone (XLA's default threads) against two at once, each pinned to its own core
# (taskset) and not pinned. The time of steps 300-600 (one evaluation included)
# is read from each run's metrics.jsonl. Run with nothing else on the machine.
set -e
ARGS="halfcheetah-vel --dataset expert --methods maxout --seeds 1 --steps 600 --eval-every 300 --checkpoint-every 600 --episodes 1 --n-return-rewards 1 --eval-samples 10"
OUT=${OUT:-/tmp/throughput}; rm -rf "$OUT"; mkdir -p "$OUT"
ONE="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
resolvent optimize $ARGS --out $OUT/a > $OUT/a.log 2>&1
XLA_FLAGS="$ONE" taskset -c 0 resolvent optimize $ARGS --out $OUT/b1 > $OUT/b1.log 2>&1 &
XLA_FLAGS="$ONE" taskset -c 1 resolvent optimize $ARGS --seed 1 --out $OUT/b2 > $OUT/b2.log 2>&1 &
wait
resolvent optimize $ARGS --out $OUT/c1 > $OUT/c1.log 2>&1 &
resolvent optimize $ARGS --seed 1 --out $OUT/c2 > $OUT/c2.log 2>&1 &
wait
for d in a b1 b2 c1 c2; do python -c "
import json; s = {r['step']: r['seconds'] for r in map(json.loads, open('$OUT/$d/metrics.jsonl'))}
print('$d', 'steps 300-600:', round(s[600] - s[300], 1), 's')"; done
