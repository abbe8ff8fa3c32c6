#!/usr/bin/env bash
# Reproduces the offline-policy-evaluation results: one run per family and dataset kind
# (4 networks x 3 seeds x 15k steps each) under runs/, their small files copied to results/,
# then the paper's whole OPE figure, results/ope.png. These are the paper's settings
# (--preset paper: tau 0.005, the family's rewards alone); a run killed midway is resumed.
set -euo pipefail
families=${FAMILIES:-"pendulum-angle halfcheetah-vel ant-dir"}
kinds=${KINDS:-"replay expert medium"}
for fam in $families; do
  for kind in $kinds; do
    run="runs/ope/$fam-$kind"
    if [ -f "$run/done" ]; then echo "done: $run"; continue; fi
    if [ -f "$run/config.json" ]; then
      resolvent evaluate --out "$run" --resume
    else
      resolvent evaluate "$fam" --dataset "$kind" --preset paper --seeds 3 --steps 15000 --out "$run"
    fi
    touch "$run/done"
    mkdir -p "results/$fam-$kind"
    cp "$run"/{config.json,metrics.jsonl,results.json,mse.png} "results/$fam-$kind/"
  done
done
resolvent figure ope --runs results --out results
