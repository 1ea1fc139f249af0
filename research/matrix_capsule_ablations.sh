#!/usr/bin/env bash
# Ablations of the small matrix-capsule model on the procedural shapes:
# the iterations of the paper's recipe, each change that public
# reimplementations make to Procedure 1's activation alone, and the
# `standardized` recipe with variations. Each variant is a
# `--preset=PRESET:field=value,...` of `layers.EMRouting`.
# The variants of options since removed from the example (the loss, the
# official margin schedule, coordinate addition, batch normalisation
# after conv1, the vote weights' and primary bias's initialisation,
# separate class-capsule iterations) ran with the script as of commit
# e2935bd; their lines are in results/matrix_capsule_ablations_procedural.jsonl.
# One short run per variant, then one JSON line per run.
# Usage: bash research/matrix_capsule_ablations.sh OUTPUT_DIR [EXTRA_FLAGS...]
# VARIANTS="name ..." runs only the named variants.
set -euo pipefail
output_dir=$1
shift
mkdir -p "$output_dir"
unsmoothed="standardized:assignment_smoothing=0"
per_mass="$unsmoothed,cost_normalization=per_mass_standardize"
variants=(
  "standardized_2_iterations standardized:num_iterations=2"
  "standardized_3_iterations standardized:num_iterations=3"
  "unsmoothed_2_iterations $unsmoothed,num_iterations=2"
  "unsmoothed_3_iterations $unsmoothed,num_iterations=3"
  "unsmoothed_3_floor_5e-3 $unsmoothed,num_iterations=3,variance_floor=5e-3"
  "unsmoothed_2_floor_5e-3 $unsmoothed,num_iterations=2,variance_floor=5e-3"
  "unsmoothed_3_floor_5e-2 $unsmoothed,num_iterations=3,variance_floor=5e-2"
  "unsmoothed_2_floor_5e-2 $unsmoothed,num_iterations=2,variance_floor=5e-2"
  "unsmoothed_3_floor_0.2 $unsmoothed,num_iterations=3,variance_floor=0.2"
  "paper_3_iterations paper:num_iterations=3"
  "paper_1_iteration paper:num_iterations=1"
  "paper_2_iterations paper:num_iterations=2"
  "bias_gain_5000 paper:activation_bias_gain=5000"
  "per_child_cost paper:cost_normalization=per_child,final_inverse_temperature=1"
  "standardized_cost paper:cost_normalization=standardize,final_inverse_temperature=1"
  "variance_floor paper:variance_floor=5e-4"
  "geometric_lambda paper:schedule=geometric,final_inverse_temperature=0.01"
  "per_mass_standardized_3 $per_mass,num_iterations=3"
  "per_mass_standardized_2 $per_mass,num_iterations=2"
)
for variant in "${variants[@]}"; do
  read -r name preset <<<"$variant"
  if [[ -n "${VARIANTS:-}" && " $VARIANTS " != *" $name "* ]]; then
    continue
  fi
  python -m examples.train_matrix_capsules --dataset=procedural_shapes \
    --model=small --model_dir="$output_dir/$name" --preset="$preset" "$@" \
    > "$output_dir/$name.log" 2>&1
  python - "$output_dir/$name/results.json" "$name" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
test_error = 1 - results["evaluation"]["test"]["accuracy"]
print(json.dumps({"variant": sys.argv[2], "test_error": round(test_error, 5),
                  "train_seconds": results["train_seconds"]}))
PY
done
