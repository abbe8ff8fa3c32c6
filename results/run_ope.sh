#!/usr/bin/env bash
# Reproduces the offline-policy-evaluation results: one run per family and dataset kind
# (4 networks x 3 seeds x 15k steps each) under runs/, their small files copied to results/,
# then the paper's whole OPE figure, results/ope.png.
set -euo pipefail
families=${FAMILIES:-"pendulum-angle halfcheetah-vel ant-dir"}
kinds=${KINDS:-"replay expert medium"}
for fam in $families; do
  for kind in $kinds; do
    run="runs/ope/$fam-$kind"
    if [ -f "$run/results.json" ]; then echo "done: $run"; continue; fi
    if [ -f "$run/config.json" ]; then
      resolvent evaluate --out "$run" --resume
    else
      resolvent evaluate "$fam" --dataset "$kind" --seeds 3 --steps 15000 --out "$run"
    fi
    mkdir -p "results/$fam-$kind"
    cp "$run"/{config.json,metrics.jsonl,results.json,mse.png} "results/$fam-$kind/"
  done
done
resolvent figure ope --runs results --out results
