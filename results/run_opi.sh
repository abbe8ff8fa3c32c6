#!/usr/bin/env bash
# Reproduces the offline-policy-optimisation results: max-out and vanilla operators, 3 seeds,
# one dataset kind per family (operator DQN on Pendulum-Angle, operator BCQ on HalfCheetah-Vel
# and Ant-Dir) under runs/opi/, the single-reward baselines of each run's 3 test rewards, the
# small files copied to results/opi-*, then the paper's figure, results/opi.png.
set -euo pipefail
families=${FAMILIES:-"pendulum-angle halfcheetah-vel ant-dir"}
kind=${KIND:-expert}
for fam in $families; do
  run="runs/opi/$fam-$kind"
  if [ "$fam" = pendulum-angle ]; then
    budget="--steps 15000 --eval-every 1000 --checkpoint-every 5000"
    baselines="--kinds offline,td3 --methods vanilla"
  else  # BCQ's evaluation samples 100 actions per state: 10 keeps a CPU run affordable; an
    # operator-BCQ step costs about 10 GFLOP per seed (10 VAE samples per next state through
    # the 750-750 decoder, the perturbation operator and both critics), so on a 2-core CPU
    # 5000 steps x 3 seeds x 2 critics take about an hour; STEPS and TD3_STEPS raise them
    budget="--steps ${STEPS:-5000} --eval-every 1000 --checkpoint-every 1000 --episodes 2 --eval-samples 10"
    baselines="--kinds td3 --td3-steps ${TD3_STEPS:-30000}"
  fi
  if [ ! -f "$run/returns.png" ]; then
    if [ -f "$run/config.json" ]; then
      resolvent optimize --out "$run" --resume
    else
      # shellcheck disable=SC2086
      resolvent optimize "$fam" --dataset "$kind" --methods maxout,vanilla --seeds 3 $budget --out "$run"
    fi
  fi
  # shellcheck disable=SC2086
  [ -f "$run/baselines/baselines.json" ] || resolvent baselines "$run" $baselines
  mkdir -p "results/opi-$fam-$kind"
  cp "$run"/{config.json,metrics.jsonl,results.json,returns.png} "$run/baselines/baselines.json" \
     "results/opi-$fam-$kind/"
done
python -c "from resolvent.experiments.plots import figure_opi; print(figure_opi('results', 'results'))"
