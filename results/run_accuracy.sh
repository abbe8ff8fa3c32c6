#!/usr/bin/env bash
# Reproduces the accuracy results (zero-shot answers for any reward; results/README.md,
# "Accuracy for any reward"): the default configuration (mix prior, tau 0.05) next to the
# per-reward FQE oracle and the paper's configuration, on Pendulum-Angle's three datasets and
# Ant-Dir expert. Each run's small files are copied to results/accuracy/. Resumable: a run
# killed midway is resumed, a finished one skipped.
set -euo pipefail
run_one() {   # NAME ARGS...
  local name=$1; shift
  local run="runs/accuracy/$name"
  if [ -f "$run/done" ]; then echo "done: $run"; return; fi
  if [ -f "$run/config.json" ]; then resolvent evaluate --out "$run" --resume
  else resolvent evaluate "$@" --out "$run"; fi
  touch "$run/done"
  mkdir -p "results/accuracy/$name"
  cp "$run"/{config.json,metrics.jsonl,results.json,mse.png} "results/accuracy/$name/"
}
part=${PART:-all}   # pendulum, ant, halfcheetah or all (parts can run side by side)
if [ "$part" = all ] || [ "$part" = pendulum ]; then
run_one pendulum-angle-expert pendulum-angle --dataset expert --methods attention,vanilla,sf,fqe --seeds 3 --steps 15000
run_one pendulum-angle-expert-paper pendulum-angle --dataset expert --preset paper --methods attention --seeds 3 --steps 15000
for kind in replay medium; do
  run_one "pendulum-angle-$kind" pendulum-angle --dataset "$kind" --methods attention,fqe --seeds 1 --steps 15000
done
fi
if [ "$part" = all ] || [ "$part" = halfcheetah ]; then
run_one halfcheetah-vel-expert halfcheetah-vel --dataset expert --methods attention,fqe --seeds 1 --steps 15000
fi
if [ "$part" = all ] || [ "$part" = ant ]; then
run_one ant-dir-expert ant-dir --dataset expert --methods attention,fqe --seeds 1 --steps 15000
run_one ant-dir-expert-paper ant-dir --dataset expert --preset paper --methods attention --seeds 1 --steps 15000
fi
