#!/usr/bin/env bash
# Reproduces the capsule regression results table of the README (Saul, 3.4):
# the paper's protocol for every dataset, architecture and capsule size given.
# Usage: bash examples/capsule_regression_sweep.sh RUN_DIR [DATASETS] [DIMS] [ARCHITECTURES]
set -euo pipefail
run_dir=${1:?usage: capsule_regression_sweep.sh RUN_DIR [DATASETS] [DIMS] [ARCHITECTURES]}
datasets=${2:-"mnist fashion_mnist"}
dims=${3:-"2 1 4 8 16"}
architectures=${4:-"multiclass"}
mkdir -p "$run_dir"
for architecture in $architectures; do
  for d in $dims; do
    for dataset in $datasets; do
      out="$run_dir/${dataset}_${architecture}_d${d}"
      python -m examples.capsule_regression --dataset="$dataset" \
        --capsule_dim="$d" --architecture="$architecture" \
        --model_dir="$out" >"$out.log" 2>&1
      cat "$out/results.json" >>"$run_dir/results.jsonl"
      echo >>"$run_dir/results.jsonl"
    done
  done
done
