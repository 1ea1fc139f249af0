"""The main demo: capsule models on the built-in procedural dataset.

Trains capsule regression (EM and SGD; multiclass, one-versus-all and
all-versus-all), a small dynamic-routing CapsNet, a small Heinsen-routing
image model, the small matrix-capsule network (EM routing) and the
generative capsule model (unsupervised; a linear probe on its top
capsules classifies) on objects made of parts seen from familiar
viewpoints, tests on familiar and novel viewpoints, prints a results table
and writes figures. No download; a few minutes on 2 CPU cores.

`--preset=default:capsnet_epochs=2,train_size=3000` changes how much
each row trains (`Budget`); `--only=capsnet,matrix` runs some rows.

Usage: python -m examples.demo --model_dir=demo_output
"""

import dataclasses
import json
import os
import time

from absl import app, flags

from examples import demo_families, presets, run_flags, run_results, runs
from keras_capsules import (
    datasets,
    plots,
)


@dataclasses.dataclass(frozen=True)
class Budget:
    """How much each row of the demo trains.

    Args:
        train_size: int, training images of the capsule regressions, the
            CapsNet and the Heinsen model.
        em_iterations: int, the cap on each capsule regression's EM
            iterations.
        sgd_epochs: int, epochs of the capsule regression trained by SGD.
        capsnet_epochs: int, CapsNet's epochs.
        heinsen_epochs: int, the Heinsen model's epochs.
        matrix_epochs: int, the matrix-capsule model's epochs.
        matrix_train_size: int, its training images.
        generative_epochs: int, the generative capsule model's epochs.
        generative_train_size: int, its training images.
    """

    train_size: int = 10000
    em_iterations: int = 400
    sgd_epochs: int = 20
    capsnet_epochs: int = 6
    heinsen_epochs: int = 4
    matrix_epochs: int = 1
    matrix_train_size: int = 4000
    generative_epochs: int = 3
    generative_train_size: int = 3000


# The budget of `make demo` (a few minutes on 2 CPU cores); change any of
# it with `--preset=default:field=value,...`.
PRESETS = {"default": Budget()}
DEFAULTS = {
    "model_dir": "demo_output",
    "preset": "default",
    "jit_compile": "true",
}
_PRESET, _TEST_SIZE = run_flags.request(__name__, "preset", "test_size")
_ONLY = flags.DEFINE_list(
    "only",
    None,
    "Run only the rows of these models: multiclass, one_vs_all, "
    "all_vs_all, capsnet, heinsen, matrix, generative.",
)


def train_row(raw, features, training, capsule_dim, architecture, budget):
    """Trains the model of one row of the table within `budget`; returns
    its errors (`test`, `test_novel`), its steps (EM iterations or epochs)
    and its capsule regression layer (None for the image models)."""
    output_dir = runs.MODEL_DIR.value
    image_models = {
        "capsnet": (
            budget.capsnet_epochs,
            lambda epochs: demo_families.run_capsnet(raw, epochs, output_dir),
        ),
        "heinsen": (
            budget.heinsen_epochs,
            lambda epochs: demo_families.run_heinsen(raw, epochs),
        ),
        "matrix": (
            budget.matrix_epochs,
            lambda epochs: demo_families.run_matrix_capsules(
                raw, epochs, budget.matrix_train_size, output_dir
            ),
        ),
        "generative": (
            budget.generative_epochs,
            lambda epochs: demo_families.run_generative_capsules(
                raw, epochs, budget.generative_train_size, output_dir
            ),
        ),
    }
    if architecture in image_models:
        epochs, train = image_models[architecture]
        return train(epochs), epochs, None
    if training == "em":
        return demo_families.run_em(
            features, capsule_dim, architecture, budget.em_iterations
        )
    return demo_families.run_sgd(features, capsule_dim, budget.sgd_epochs)


def budget():
    """The `Budget` of `--preset`."""
    return presets.parse(_PRESET.value or "default", "preset", PRESETS)


def check_settings_flags():
    """Raises `app.UsageError` unless `--preset` names a budget."""
    budget()


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    runs.set_up(**DEFAULTS)
    rows_budget = budget()
    raw, features = demo_families.load_features(
        rows_budget.train_size, runs.SEED.value, _TEST_SIZE.value
    )
    planned = [
        ("capsule regression, multiclass", "em", 2, "multiclass"),
        ("capsule regression, multiclass", "em", 8, "multiclass"),
        ("capsule regression, one-vs-all", "em", 2, "one_vs_all"),
        ("capsule regression, all-vs-all", "em", 2, "all_vs_all"),
        ("capsule regression, multiclass", "sgd", 8, "multiclass"),
        ("CapsNet, dynamic routing", "sgd", 16, "capsnet"),
        ("Heinsen routing, image model", "sgd", 4, "heinsen"),
        ("matrix capsules, EM routing", "sgd", 16, "matrix"),
        ("generative capsules (probe)", "elbo", 6, "generative"),
    ]
    rows, layers = [], {}
    if _ONLY.value:
        unknown = set(_ONLY.value) - {run[3] for run in planned}
        if unknown:
            raise app.UsageError(
                f"--only: unknown models {sorted(unknown)}; expected some of "
                f"{sorted({run[3] for run in planned})}."
            )
        planned = [run for run in planned if run[3] in _ONLY.value]
    for number, (name, training, capsule_dim, architecture) in enumerate(
        planned, 1
    ):
        print(
            f"[{number}/{len(planned)}] {name} ({training}, d = "
            f"{capsule_dim}): training ...",
            flush=True,
        )
        start = time.time()
        errors, steps, layer = train_row(
            raw, features, training, capsule_dim, architecture, rows_budget
        )
        if layer is not None:
            layers[(training, capsule_dim)] = layer
        rows.append(
            {
                "model": name,
                "training": training,
                "d": capsule_dim,
                "familiar_error": round(float(errors["test"]), 4),
                "novel_error": round(float(errors["test_novel"]), 4),
                "steps": steps,
                "seconds": round(time.time() - start, 1),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    run_results.write_results(
        {
            **run_results.describe_run(main, "procedural_shapes"),
            "budget": dataclasses.asdict(rows_budget),
            "rows": rows,
        }
    )
    x_test, y_test = features["test"]
    if ("em", 2) in layers:
        plots.plot_latent_space(
            layers[("em", 2)],
            x_test,
            y_test,
            os.path.join(runs.MODEL_DIR.value, "latent_space.png"),
            class_names=list(datasets.SHAPE_NAMES),
        )
    if ("em", 8) in layers:
        plots.plot_prototypes(
            layers[("em", 8)],
            *features["train"],
            raw["train"]["image"],
            os.path.join(runs.MODEL_DIR.value, "prototypes.png"),
            class_names=list(datasets.SHAPE_NAMES),
        )
    print_table(rows)
    print(f"Figures and results.json written to {runs.MODEL_DIR.value}/")


def print_table(rows):
    header = (
        f"{'model':34} {'training':8} {'d':>3} {'familiar':>9} "
        f"{'novel':>7} {'steps':>6} {'seconds':>8}"
    )
    print(
        "\nTest error on the procedural shapes (familiar and novel viewpoints)"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        print(
            f"{row['model']:34} {row['training']:8} {row['d']:>3} "
            f"{row['familiar_error']:>9.2%} {row['novel_error']:>7.2%} "
            f"{row['steps']:>6} {row['seconds']:>8}"
        )
    chance = 1.0 - 1.0 / len(datasets.SHAPE_NAMES)
    print(
        f"(chance error: {chance:.0%}; steps: EM iterations or SGD epochs; "
        "d of the generative model: pose size)"
    )


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
