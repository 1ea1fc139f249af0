#!/usr/bin/env bash
# The capsule regression results table of docs/guides/capsule-regression.md
# (Saul, 3.4): the paper's protocol for every dataset, architecture and
# capsule size given, one run each, their results.json files collected in
# RUN_DIR/results.jsonl.
# Usage: bash research/capsule_regression_sweep.sh RUN_DIR [EXTRA_FLAGS...]
# DATASETS, DIMS and ARCHITECTURES (space-separated) choose the grid;
# by default both datasets, d = 2 1 4 8 16, multiclass.
set -euo pipefail
run_dir=${1:?usage: capsule_regression_sweep.sh RUN_DIR [EXTRA_FLAGS...]}
shift
datasets=${DATASETS:-"mnist fashion_mnist"}
dims=${DIMS:-"2 1 4 8 16"}
architectures=${ARCHITECTURES:-"multiclass"}
mkdir -p "$run_dir"
for architecture in $architectures; do
  for d in $dims; do
    for dataset in $datasets; do
      out="$run_dir/${dataset}_${architecture}_d${d}"
      python -m examples.capsule_regression --dataset="$dataset" \
        --capsule_dim="$d" --architecture="$architecture" \
        --model_dir="$out" "$@" >"$out.log" 2>&1
      cat "$out/results.json" >>"$run_dir/results.jsonl"
      echo >>"$run_dir/results.jsonl"
    done
  done
done
