"""Every routing family on one backbone, same budget: runs
`examples/train.py` once per dataset and routing (each in its own process)
and prints a Markdown table of test error, weights and speed.

Usage:
  python -m examples.compare_routing --model_dir=runs/compare \\
      --datasets=mnist,fashion_mnist,procedural_shapes --epochs=2

Runs whose `results.json` exists are not run again, so an interrupted
comparison resumes where it stopped; `--table_only` prints the table of
what has run. `comparison.jsonl` in `--model_dir` gets one line per run
(dataset, routing, test scores, weights, seconds per epoch, examples per
second, training accuracy per epoch, flags): the digest the docs keep.
"""

import json
import os
import subprocess
import sys

from absl import app, flags

from examples import run_flags
from keras_capsules import models

# `--model_dir` holds one subdirectory per run, DATASET_ROUTING; every run
# trains `--epochs`.
_MODEL_DIR, _EPOCHS = run_flags.request(__name__, "model_dir", "epochs")
_DEFAULT_EPOCHS = 2

_DATASETS = flags.DEFINE_list(
    "datasets", ["mnist", "fashion_mnist", "procedural_shapes"], "Datasets."
)
_ROUTINGS = flags.DEFINE_list(
    "routings", list(models.ROUTINGS), "Routing families."
)
_TRAIN_FLAGS = flags.DEFINE_list(
    "train_flags", [], "More flags for every run, e.g. --train_size=2000."
)
_TABLE_ONLY = flags.DEFINE_bool("table_only", False, "Print the table only.")

_ROUTING_NAMES = {
    "dynamic": "dynamic routing (margin loss)",
    "em": "EM routing (spread loss)",
    "heinsen": "Heinsen routing (cross-entropy)",
    "self_attention": "self-attention routing (margin loss)",
    "inverted_attention": "inverted dot-product attention (cross-entropy)",
    "variational_bayes": "variational Bayes routing (cross-entropy)",
    "self_routing": "self-routing (log-loss of the activation)",
    "uniform": "uniform routing, no routing (margin loss)",
    "regression": "capsule regression head (log-loss)",
}


def run_directory(dataset, routing):
    return os.path.join(_MODEL_DIR.value, f"{dataset}_{routing}")


def run_one(dataset, routing):
    """Trains one configuration unless its results exist."""
    directory = run_directory(dataset, routing)
    if os.path.exists(os.path.join(directory, "results.json")):
        return
    os.makedirs(directory, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "examples.train",
        f"--routing={routing}",
        f"--dataset={dataset}",
        f"--epochs={_EPOCHS.value}",
        f"--model_dir={directory}",
        *_TRAIN_FLAGS.value,
    ]
    print(" ".join(command[1:]), flush=True)
    with open(os.path.join(directory, "train.log"), "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=log)


def error(results, split):
    scores = results["evaluation"].get(split)
    return "" if scores is None else f"{100 * (1 - scores['accuracy']):.2f}%"


def digest(dataset, routing, results):
    """One run's line of `comparison.jsonl`."""
    flags_used = results["flags"]
    return {
        "dataset": dataset,
        "routing": routing,
        "evaluation": results["evaluation"],
        "parameters": results["parameters"],
        "seconds_per_epoch": results["seconds_per_epoch"],
        "examples_per_second": results["examples_per_second"],
        "train_accuracy_per_epoch": [
            round(value, 5) for value in results["history"]["accuracy"]
        ],
        "flags": {
            name: flags_used[name]
            for name in (
                "epochs",
                "batch_size",
                "learning_rate",
                "capsule_dim",
                "primary_types",
                "routing_iterations",
                "seed",
            )
            if name in flags_used
        },
    }


def completed_runs(datasets, routings):
    """`(dataset, routing, results)` of each run that has results."""
    for dataset in datasets:
        for routing in routings:
            path = os.path.join(run_directory(dataset, routing), "results.json")
            if os.path.exists(path):
                with open(path) as file:
                    yield dataset, routing, json.load(file)


def table(datasets, routings):
    """The Markdown table of the runs that have results."""
    lines = [
        "| dataset | class capsules | test error | novel viewpoints | "
        "weights | s / epoch | examples / s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for dataset, routing, results in completed_runs(datasets, routings):
        # The first epoch includes tracing and compiling.
        seconds = (
            results["seconds_per_epoch"][1:] or (results["seconds_per_epoch"])
        )
        lines.append(
            f"| {dataset} | {_ROUTING_NAMES[routing]} | "
            f"{error(results, 'test')} | "
            f"{error(results, 'test_novel')} | "
            f"{results['parameters']:,} | "
            f"{sum(seconds) / len(seconds):.0f} | "
            f"{results['examples_per_second']:.0f} |"
        )
    return "\n".join(lines)


def main(argv):
    del argv
    for name in _ROUTINGS.value:
        if name not in models.ROUTINGS:
            raise app.UsageError(
                f"--routings takes {models.ROUTINGS}. Received: {name!r}."
            )
    if not _TABLE_ONLY.value:
        for dataset in _DATASETS.value:
            for routing in _ROUTINGS.value:
                run_one(dataset, routing)
    with open(os.path.join(_MODEL_DIR.value, "comparison.jsonl"), "w") as f:
        for run in completed_runs(_DATASETS.value, _ROUTINGS.value):
            f.write(json.dumps(digest(*run)) + "\n")
    print(table(_DATASETS.value, _ROUTINGS.value))


if __name__ == "__main__":
    flags.FLAGS.set_default("epochs", _DEFAULT_EPOCHS)
    flags.mark_flag_as_required("model_dir")
    app.run(main)
