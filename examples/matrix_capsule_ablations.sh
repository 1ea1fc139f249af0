#!/usr/bin/env bash
# Ablations of the matrix-capsule model on the procedural shapes: Table 1
# of the paper (iterations, coordinate addition, loss), and each change that
# public reimplementations make to Procedure 1's activation, alone and
# combined. One short run per variant, then one JSON line per run.
# Usage: bash examples/matrix_capsule_ablations.sh OUTPUT_DIR [EXTRA_FLAGS...]
# VARIANTS="name ..." runs only the named variants.
set -euo pipefail
output_dir=$1
shift
mkdir -p "$output_dir"
# The combination chosen as the models' default recipe (README).
combined="--cost_normalization=standardize --final_inverse_temperature=1 \
--variance_floor=5e-4 --margin_schedule=sigmoid"
variants=(
  "combined_3_iterations $combined --routing_iterations=3"
  "combined_2_iterations $combined --routing_iterations=2"
  "paper_3_iterations --routing_iterations=3"
  "paper_1_iteration --routing_iterations=1"
  "paper_2_iterations --routing_iterations=2"
  "no_coordinate_addition --nocoordinate_addition"
  "margin_loss --loss=margin"
  "cross_entropy --loss=cross_entropy"
  "bias_gain_5000 --activation_bias_gain=5000"
  "per_child_cost --cost_normalization=per_child --final_inverse_temperature=1"
  "standardized_cost --cost_normalization=standardize --final_inverse_temperature=1"
  "variance_floor --variance_floor=5e-4"
  "vote_weights_std_1 --vote_weight_stddev=1"
  "batch_norm --batch_norm"
  "sigmoid_margin --margin_schedule=sigmoid"
  "geometric_lambda --inverse_temperature_schedule=geometric --final_inverse_temperature=0.01"
)
for variant in "${variants[@]}"; do
  read -r name flags <<<"$variant"
  if [[ -n "${VARIANTS:-}" && " $VARIANTS " != *" $name "* ]]; then
    continue
  fi
  # shellcheck disable=SC2086
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
