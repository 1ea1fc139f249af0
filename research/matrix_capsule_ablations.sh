#!/usr/bin/env bash
# Ablations of the small matrix-capsule model on the procedural shapes:
# Table 1 of the paper (iterations, coordinate addition, loss) on the
# paper's recipe, each change that public reimplementations make to
# Procedure 1's activation alone, and the `standardized` recipe with
# variations (the `unsmoothed` ones and the `_sigmoid` ones, with the
# official margin schedule, without the assignment smoothing that the
# recipe gained later, as they were measured).
# One short run per variant, then one JSON line per run.
# Usage: bash research/matrix_capsule_ablations.sh OUTPUT_DIR [EXTRA_FLAGS...]
# VARIANTS="name ..." runs only the named variants.
set -euo pipefail
output_dir=$1
shift
mkdir -p "$output_dir"
paper="--recipe=paper"
standardized="--recipe=standardized"
unsmoothed="$standardized --assignment_smoothing=0"
sigmoid="$unsmoothed --margin_schedule=sigmoid"
per_mass="$sigmoid --cost_normalization=per_mass_standardize"
variants=(
  "standardized_2_iterations $standardized --routing_iterations=2"
  "standardized_3_iterations $standardized --routing_iterations=3"
  "unsmoothed_2_iterations $unsmoothed --routing_iterations=2"
  "unsmoothed_3_iterations $unsmoothed --routing_iterations=3"
  "conv_2_class_3_iterations $unsmoothed --routing_iterations=2 --class_routing_iterations=3"
  "conv_3_class_2_iterations $unsmoothed --routing_iterations=3 --class_routing_iterations=2"
  "conv_1_class_2_iterations $unsmoothed --routing_iterations=1 --class_routing_iterations=2"
  "standardized_sigmoid_2 $sigmoid --routing_iterations=2"
  "standardized_sigmoid_3 $sigmoid --routing_iterations=3"
  "standardized_sigmoid_3_floor_5e-3 $sigmoid --routing_iterations=3 --variance_floor=5e-3"
  "standardized_sigmoid_2_floor_5e-3 $sigmoid --routing_iterations=2 --variance_floor=5e-3"
  "standardized_sigmoid_3_floor_5e-2 $sigmoid --routing_iterations=3 --variance_floor=5e-2"
  "standardized_sigmoid_2_floor_5e-2 $sigmoid --routing_iterations=2 --variance_floor=5e-2"
  "standardized_sigmoid_3_floor_0.2 $sigmoid --routing_iterations=3 --variance_floor=0.2"
  "paper_3_iterations $paper --routing_iterations=3"
  "paper_1_iteration $paper --routing_iterations=1"
  "paper_2_iterations $paper --routing_iterations=2"
  "no_coordinate_addition $paper --nocoordinate_addition"
  "margin_loss $paper --loss=margin"
  "cross_entropy $paper --loss=cross_entropy"
  "bias_gain_5000 $paper --activation_bias_gain=5000"
  "per_child_cost $paper --cost_normalization=per_child --final_inverse_temperature=1"
  "standardized_cost $paper --cost_normalization=standardize --final_inverse_temperature=1"
  "variance_floor $paper --variance_floor=5e-4"
  "vote_weights_std_1 $paper --vote_weight_stddev=1"
  "batch_norm $paper --batch_norm"
  "paper_batch_norm_vote_std_1 $paper --batch_norm --vote_weight_stddev=1"
  "sigmoid_margin $paper --margin_schedule=sigmoid"
  "geometric_lambda $paper --inverse_temperature_schedule=geometric --final_inverse_temperature=0.01"
  "standardized_sigmoid_3_batch_norm $sigmoid --routing_iterations=3 --batch_norm"
  "standardized_sigmoid_3_vote_std_1 $sigmoid --routing_iterations=3 --vote_weight_stddev=1"
  "standardized_sigmoid_3_batch_norm_vote_std_1 $sigmoid --routing_iterations=3 --batch_norm --vote_weight_stddev=1"
  "standardized_sigmoid_2_batch_norm_vote_std_1 $sigmoid --routing_iterations=2 --batch_norm --vote_weight_stddev=1"
  "standardized_sigmoid_3_lr_1e-3 $sigmoid --routing_iterations=3 --learning_rate=1e-3"
  "standardized_sigmoid_2_lr_1e-3 $sigmoid --routing_iterations=2 --learning_rate=1e-3"
  "per_mass_standardized_sigmoid_3 $per_mass --routing_iterations=3"
  "per_mass_standardized_sigmoid_2 $per_mass --routing_iterations=2"
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
test_error = 1 - results["evaluation"]["test"]["accuracy"]
print(json.dumps({"variant": sys.argv[2], "test_error": round(test_error, 5),
                  "train_seconds": results["train_seconds"]}))
PY
done
