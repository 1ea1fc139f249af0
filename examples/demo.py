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
import math
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from examples import presets, run_flags, runs
from keras_capsules import (
    callbacks,
    datasets,
    losses,
    models,
    plots,
    recipes,
    trainers,
)
from keras_capsules.layers import CapsuleRegression


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
_PRESET, _TEST_SIZE, _BATCH_PARTS = run_flags.request(
    __name__, "preset", "test_size", "batch_parts"
)
_ONLY = flags.DEFINE_list(
    "only",
    None,
    "Run only the rows of these models: multiclass, one_vs_all, "
    "all_vs_all, capsnet, heinsen, matrix, generative.",
)

_PROJECTION_DIM = 64
_SPLITS = ("train", "validation", "test", "test_novel")


def load_features(train_size, seed, test_size=None):
    """Procedural images, projected on the training set's top directions;
    `test_size`: only the first images of each test split (all if None)."""
    raw = {
        split: datasets.load_procedural_shapes(split, seed=seed)
        for split in _SPLITS
    }
    raw["train"] = {k: v[:train_size] for k, v in raw["train"].items()}
    for split in ("test", "test_novel"):
        raw[split] = {k: v[:test_size] for k, v in raw[split].items()}
    projection = datasets.PrincipalProjection(_PROJECTION_DIM, center=False)
    projection.fit(raw["train"]["image"])
    features = {
        split: (projection.transform(raw[split]["image"]), raw[split]["label"])
        for split in _SPLITS
    }
    return raw, features


def batches(x, y):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(4096).cache()


def run_em(features, capsule_dim, architecture, max_iterations):
    trainer = trainers.CapsuleRegressionEM(
        len(datasets.SHAPE_NAMES),
        capsule_dim,
        architecture=architecture,
        schedule=trainers.EMSchedule(max_iterations=max_iterations),
    )
    history = trainer.fit(
        batches(*features["train"]), batches(*features["validation"]), verbose=0
    )
    errors = {
        s: trainer.evaluate(batches(*features[s]))
        for s in ("test", "test_novel")
    }
    layer = trainer.to_layer() if architecture == "multiclass" else None
    return errors, len(history["error"]), layer


def run_sgd(features, capsule_dim, epochs):
    x, y = features["train"]
    model = keras.Sequential(
        [
            keras.Input((x.shape[1],)),
            CapsuleRegression(len(datasets.SHAPE_NAMES), capsule_dim),
        ]
    )
    model.compile(
        keras.optimizers.Adam(3e-3),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=runs.use_xla(),
    )
    model.fit(
        x,
        y,
        batch_size=128,
        epochs=epochs,
        validation_data=features["validation"],
        verbose=0,
    )
    errors = {
        s: 1.0 - model.evaluate(*features[s], verbose=0)[1]
        for s in ("test", "test_novel")
    }
    return errors, epochs, model.layers[-1]


def viewpoint_errors(model, raw, one_hot=False):
    """`model`'s test errors on familiar (`test`) and novel (`test_novel`)
    viewpoints; `one_hot`: the model takes one-hot labels."""
    errors = {}
    for split in ("test", "test_novel"):
        labels = raw[split]["label"]
        if one_hot:
            labels = keras.utils.to_categorical(
                labels, len(datasets.SHAPE_NAMES)
            )
        scores = model.evaluate(
            raw[split]["image"], labels, return_dict=True, verbose=0
        )
        errors[split] = 1.0 - scores["accuracy"]
    return errors


def run_capsnet(raw, epochs, output_dir):
    """A small CapsNet (64 conv channels, 8 primary capsule types) on the
    images; writes its reconstructions and perturbation figures."""
    model = models.capsnet((28, 28, 1), len(datasets.SHAPE_NAMES), "small")
    model.compile(keras.optimizers.Adam(2e-3), metrics=["accuracy"])
    model.fit(
        raw["train"]["image"],
        raw["train"]["label"],
        batch_size=64,
        epochs=epochs,
        verbose=0,
    )
    errors = viewpoint_errors(model, raw)
    images = raw["test"]["image"][:8]
    capsules = model.encode(images)
    predictions = np.argmax(model.capsule_length(capsules), axis=-1)
    plots.plot_reconstructions(
        images,
        model.reconstruct(capsules).numpy(),
        os.path.join(output_dir, "capsnet_reconstructions.png"),
        labels=raw["test"]["label"][:8],
        predictions=predictions,
    )
    plots.plot_capsule_perturbations(
        lambda masked: model.decoder(masked).numpy(),
        capsules[0].numpy(),
        int(predictions[0]),
        os.path.join(output_dir, "capsnet_perturbations.png"),
    )
    return errors


def run_heinsen(raw, epochs):
    """A small Heinsen image model (32 channels, 16 part capsules) with the
    paper's recipe: mixup, RAdam on one cycle (peak rate 3e-3 for this
    short run)."""
    classifier = models.heinsen_image(
        (None, None, 1), len(datasets.SHAPE_NAMES), filters=32, num_parts=16
    )
    model = recipes.MixupClassifier(classifier, alpha=0.2, seed=0)
    batch_size = 32
    steps = epochs * -(-len(raw["train"]["label"]) // batch_size)
    model.compile(
        optimizer=recipes.one_cycle_radam(steps, learning_rate=(1e-4, 3e-3)),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    num_classes = len(datasets.SHAPE_NAMES)
    model.fit(
        raw["train"]["image"],
        keras.utils.to_categorical(raw["train"]["label"], num_classes),
        batch_size=batch_size,
        epochs=epochs,
        verbose=0,
    )
    return viewpoint_errors(model, raw, one_hot=True)


def run_matrix_capsules(raw, epochs, train_size, output_dir):
    """The paper's small matrix-capsule model (A=64, B=8, C=D=16), default
    recipe, with spread loss, the margin rising from 0.2 to 0.9 over the
    run, each batch in `--batch_parts` slices; writes the vote-distance
    histograms of Fig. 2."""
    num_classes = len(datasets.SHAPE_NAMES)
    classifier = models.small_matrix_capsnet(num_classes, (28, 28, 1))
    model = runs.in_batch_parts(classifier, _BATCH_PARTS.value)
    loss = losses.SpreadLoss()
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=loss,
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=runs.use_xla(),
    )
    images = raw["train"]["image"][:train_size]
    labels = raw["train"]["label"][:train_size]
    batch_size = 32
    total_steps = epochs * math.ceil(len(images) / batch_size)
    model.fit(
        images,
        labels,
        batch_size=batch_size,
        epochs=epochs,
        verbose=0,
        callbacks=[callbacks.SpreadLossMargin(loss, total_steps)],
    )
    plots.plot_vote_distances(
        classifier,
        raw["test"]["image"][:3],
        os.path.join(output_dir, "em_vote_distances.png"),
        class_names=list(datasets.SHAPE_NAMES),
    )
    return viewpoint_errors(model, raw)


def run_generative_capsules(raw, epochs, train_size, output_dir):
    """The generative capsule model (Smith et al. 2020), trained without
    labels; errors are those of a linear probe on its top capsules
    `(t0, A0)`. Writes reconstructions and templates."""
    images = raw["train"]["image"][:train_size]
    model = models.generative_capsule_autoencoder(
        image_shape=images.shape[1:], seed=runs.SEED.value
    )
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3), jit_compile=runs.use_xla()
    )
    model.fit(images, batch_size=64, epochs=epochs, verbose=0)

    def features(x):
        return models.top_layer_features(model.encode(x))["t0_A0"]

    accuracy = trainers.linear_probe_accuracy(
        features(images),
        raw["train"]["label"][:train_size],
        {
            s: (features(raw[s]["image"]), raw[s]["label"])
            for s in ("test", "test_novel")
        },
        epochs=30,
        seed=runs.SEED.value,
    )
    examples = raw["test_novel"]["image"][:8]
    plots.plot_image_rows(
        {"input": examples, "reconstruction": np.asarray(model(examples))},
        os.path.join(output_dir, "generative_reconstructions.png"),
    )
    plots.plot_templates(
        model.decoder, os.path.join(output_dir, "generative_templates.png")
    )
    return {s: 1.0 - accuracy[s] for s in accuracy}


def train_row(raw, features, training, capsule_dim, architecture, budget):
    """Trains the model of one row of the table within `budget`; returns
    its errors (`test`, `test_novel`), its steps (EM iterations or epochs)
    and its capsule regression layer (None for the image models)."""
    output_dir = runs.MODEL_DIR.value
    image_models = {
        "capsnet": (
            budget.capsnet_epochs,
            lambda epochs: run_capsnet(raw, epochs, output_dir),
        ),
        "heinsen": (
            budget.heinsen_epochs,
            lambda epochs: run_heinsen(raw, epochs),
        ),
        "matrix": (
            budget.matrix_epochs,
            lambda epochs: run_matrix_capsules(
                raw, epochs, budget.matrix_train_size, output_dir
            ),
        ),
        "generative": (
            budget.generative_epochs,
            lambda epochs: run_generative_capsules(
                raw, epochs, budget.generative_train_size, output_dir
            ),
        ),
    }
    if architecture in image_models:
        epochs, train = image_models[architecture]
        return train(epochs), epochs, None
    if training == "em":
        return run_em(features, capsule_dim, architecture, budget.em_iterations)
    return run_sgd(features, capsule_dim, budget.sgd_epochs)


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
    raw, features = load_features(
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
    runs.write_results(
        {
            **runs.describe_run(main, "procedural_shapes"),
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
