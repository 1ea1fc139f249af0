#!/usr/bin/env bash
# Heinsen image model: what one epoch of the paper's recipe gives with
# each place where the author's code (the default) and the paper's text
# or this library's first version differ switched back, one at a time
# and all together. One run per variant, then one JSON line per run
# (test accuracy, seconds, and the accuracy after each epoch).
# Usage: bash research/heinsen_image_ablations.sh OUTPUT_DIR [EXTRA_FLAGS...]
# (for example --dataset=fashion_mnist). VARIANTS="name ..." runs only
# the named variants.
set -euo pipefail
output_dir=$1
shift
mkdir -p "$output_dir"
first_version="--beta_1_schedule=paper_text --initialization=keras --routing_epsilon=1e-9"
variants=(
  "author_code "
  "paper_text_beta_1 --beta_1_schedule=paper_text"
  "keras_initialization --initialization=keras"
  "epsilon_1e-9 --routing_epsilon=1e-9"
  "first_version $first_version"
)
for variant in "${variants[@]}"; do
  read -r name flags <<<"$variant"
  if [[ -n "${VARIANTS:-}" && " $VARIANTS " != *" $name "* ]]; then
    continue
  fi
  # shellcheck disable=SC2086
  python -m examples.train_heinsen_image --preset=paper --epochs=1 \
    --model_dir="$output_dir/$name" $flags "$@" \
    > "$output_dir/$name.log" 2>&1
  python - "$output_dir/$name/results.json" "$name" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
print(json.dumps({
    "variant": sys.argv[2],
    "dataset": results["dataset"],
    "test_accuracy": results["evaluation"]["test"]["accuracy"],
    "val_accuracy_per_epoch": results["history"]["val_accuracy"],
    "train_seconds": results["train_seconds"],
    "flags": results["flags"],
}))
PY
done
