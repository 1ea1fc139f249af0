#!/usr/bin/env bash
# Table 1 ablations of the matrix-capsule paper on the procedural shapes:
# one short run per variant, then one JSON line per run.
# Usage: bash examples/matrix_capsule_ablations.sh OUTPUT_DIR [EXTRA_FLAGS...]
set -euo pipefail
output_dir=$1
shift
mkdir -p "$output_dir"
variants=(
  "iterations_3 --routing_iterations=3"
  "iterations_1 --routing_iterations=1"
  "iterations_2 --routing_iterations=2"
  "no_coordinate_addition --nocoordinate_addition"
  "margin_loss --loss=margin"
  "cross_entropy --loss=cross_entropy"
)
for variant in "${variants[@]}"; do
  read -r name flags <<<"$variant"
  python -m examples.train_matrix_capsules --dataset=procedural_shapes \
    --model=small --model_dir="$output_dir/$name" $flags "$@" \
    > "$output_dir/$name.log" 2>&1
  python - "$output_dir/$name/results.json" "$name" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
print(json.dumps({"variant": sys.argv[2], "test_error": results["test_error"],
                  "train_seconds": results["train_seconds"]}))
PY
done
