"""Trains capsule regression (Saul) by EM or SGD and reports test error.

Follows the paper's protocol: images projected to p = 196 principal
directions of the training images, the first 50K training images to train
and the last 10K to validate, five rounds of thresholded EM with momentum.

Usage:
  python -m examples.capsule_regression --dataset=mnist --capsule_dim=2 \
      --output_dir=runs/mnist_d2
  python -m examples.capsule_regression --dataset=procedural_shapes \
      --architecture=all_vs_all --capsule_dim=2 --output_dir=runs/shapes
"""

import json
import os
import time

import keras
import tensorflow as tf
from absl import app, flags

from examples import distribution, runs
from keras_capsules import datasets, trainers
from keras_capsules.layers import CapsuleRegression

DATASETS = ("mnist", "fashion_mnist", "procedural_shapes")
# The script's defaults of the flags of `examples/runs.py`: `--train_size`
# training examples, the rest of a TFDS training split validates;
# `--epochs`, `--batch_size` and `--learning_rate` (Adam) for SGD only.
DEFAULTS = {
    "dataset": "procedural_shapes",
    "capsule_dim": 2,
    "train_size": 50000,
    "epochs": 30,
    "batch_size": 128,
    "learning_rate": 1e-3,
}
_ARCHITECTURE = flags.DEFINE_enum(
    "architecture",
    "multiclass",
    list(trainers.ARCHITECTURES),
    "Multiclass capsules, or ensembles of binary models (section 3.4).",
)
_TRAINING = flags.DEFINE_enum(
    "training", "em", ["em", "sgd"], "EM updates (eqs. 22-27) or SGD."
)
_PROJECTION_DIM = flags.DEFINE_integer(
    "projection_dim", 196, "Principal directions p the images project to."
)
_CENTER = flags.DEFINE_bool(
    "center",
    False,
    "Centre the images on the training mean before projecting "
    "(the paper projects the raw images).",
)
_USE_OFFSET = flags.DEFINE_bool("use_offset", False, "Add an offset b_i.")
_MAX_ITERATIONS = flags.DEFINE_integer(
    "max_iterations", None, "Cap on EM iterations (default: the protocol)."
)
_MOMENTUM = flags.DEFINE_float("momentum", 0.9, "EM momentum gamma (eq. 27).")
_STATISTICS_BATCH = flags.DEFINE_integer(
    "statistics_batch",
    10000,
    "EM: examples per batch when summing sufficient statistics.",
)
_OUTPUT_DIR = flags.DEFINE_string(
    "output_dir", None, "Where results.json, figures and models go."
)


def load_splits(name, train_size, seed=0):
    """Returns dict of (images, labels) for train, validation and test."""
    if name == "procedural_shapes":
        splits = {}
        for split in ("train", "validation", "test", "test_novel"):
            data = datasets.load_procedural_shapes(split, seed=seed)
            splits[split] = (data["image"], data["label"])
        if train_size < len(splits["train"][1]):
            splits["train"] = tuple(a[:train_size] for a in splits["train"])
        return splits
    images, labels = datasets.load_image_arrays(name, "train")
    test = datasets.load_image_arrays(name, "test")
    return {
        "train": (images[:train_size], labels[:train_size]),
        "validation": (images[train_size:], labels[train_size:]),
        "test": test,
    }


def project_splits(splits, num_components, center):
    """Projects every split on the training images' principal directions."""
    projection = datasets.PrincipalProjection(num_components, center=center)
    projection.fit(splits["train"][0])
    return {
        name: (projection.transform(x), y) for name, (x, y) in splits.items()
    }


def as_dataset(features, labels, batch_size):
    return (
        tf.data.Dataset.from_tensor_slices((features, labels))
        .batch(batch_size)
        .cache()
    )


def train_em(features, capsule_dim, architecture, output_dir):
    trainer = trainers.CapsuleRegressionEM(
        num_classes=int(features["train"][1].max()) + 1,
        capsule_dim=capsule_dim,
        architecture=architecture,
        momentum=_MOMENTUM.value,
        use_offset=_USE_OFFSET.value,
        max_iterations=_MAX_ITERATIONS.value,
        seed=runs.SEED.value,
    )
    batch = _STATISTICS_BATCH.value
    # With an output directory, a restarted run resumes where it stopped.
    checkpoint = (
        os.path.join(output_dir, "em_state.npz") if output_dir else None
    )
    history = trainer.fit(
        as_dataset(*features["train"], batch),
        as_dataset(*features["validation"], batch),
        checkpoint_path=checkpoint,
    )
    errors = {
        name: trainer.evaluate(as_dataset(x, y, batch))
        for name, (x, y) in features.items()
    }
    layer = trainer.to_layer() if architecture == "multiclass" else None
    if output_dir:
        with open(os.path.join(output_dir, "history.json"), "w") as f:
            json.dump(history, f)
    return errors, len(history["error"]), layer


def train_sgd(features, capsule_dim, output_dir):
    x, y = features["train"]
    model = keras.Sequential([keras.Input((x.shape[1],))])
    model.add(
        CapsuleRegression(
            int(y.max()) + 1, capsule_dim, use_offset=_USE_OFFSET.value
        )
    )
    model.compile(
        keras.optimizers.Adam(runs.LEARNING_RATE.value),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=True,
    )
    callbacks = [
        keras.callbacks.EarlyStopping(
            "val_accuracy", patience=5, restore_best_weights=True
        )
    ]
    if output_dir:
        callbacks += [
            keras.callbacks.ModelCheckpoint(
                os.path.join(output_dir, "model.keras"),
                "val_accuracy",
                save_best_only=True,
            ),
            # A restarted run resumes from its last epoch.
            keras.callbacks.BackupAndRestore(
                os.path.join(output_dir, "backup")
            ),
        ]
    history = model.fit(
        x,
        y,
        batch_size=runs.BATCH_SIZE.value,
        epochs=runs.EPOCHS.value,
        validation_data=features["validation"],
        callbacks=callbacks,
        verbose=2,
    )
    errors = {
        name: float(1.0 - model.evaluate(a, b, batch_size=4096, verbose=0)[1])
        for name, (a, b) in features.items()
    }
    return errors, len(history.history["loss"]), model.layers[-1]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    runs.set_defaults(**DEFAULTS)
    name = runs.dataset(DATASETS)
    keras.utils.set_random_seed(runs.SEED.value)
    output_dir = _OUTPUT_DIR.value
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
    if _TRAINING.value == "sgd" and _ARCHITECTURE.value != "multiclass":
        raise app.UsageError("--training=sgd trains the multiclass model only.")
    start = time.time()
    splits = load_splits(name, runs.TRAIN_SIZE.value, runs.SEED.value)
    features = project_splits(splits, _PROJECTION_DIM.value, _CENTER.value)
    with distribution.make_strategy(runs.STRATEGY.value).scope():
        if _TRAINING.value == "em":
            errors, iterations, layer = train_em(
                features,
                runs.CAPSULE_DIM.value,
                _ARCHITECTURE.value,
                output_dir,
            )
        else:
            errors, iterations, layer = train_sgd(
                features, runs.CAPSULE_DIM.value, output_dir
            )
    results = {
        "dataset": name,
        "architecture": _ARCHITECTURE.value,
        "capsule_dim": runs.CAPSULE_DIM.value,
        "training": _TRAINING.value,
        "projection_dim": _PROJECTION_DIM.value,
        "centred": _CENTER.value,
        "offset": _USE_OFFSET.value,
        "train_size": len(features["train"][1]),
        "iterations": iterations,
        "seconds": round(time.time() - start, 1),
        **{f"{name}_error": round(float(e), 5) for name, e in errors.items()},
    }
    print(json.dumps(results))
    if output_dir:
        with open(os.path.join(output_dir, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        if runs.FIGURES.value and layer is not None:
            write_figures(layer, splits, features, output_dir)


def write_figures(layer, splits, features, output_dir):
    """Writes the latent-space (eq. 29, d = 2) and prototype (eq. 30) PNGs."""
    from keras_capsules import plots  # noqa: PLC0415

    x_test, y_test = features["test"]
    if layer.capsule_dim == 2:
        plots.plot_latent_space(
            layer, x_test, y_test, os.path.join(output_dir, "latent_space.png")
        )
    x_train, y_train = features["train"]
    plots.plot_prototypes(
        layer,
        x_train,
        y_train,
        splits["train"][0],
        os.path.join(output_dir, "prototypes.png"),
    )


if __name__ == "__main__":
    runs.set_defaults(**DEFAULTS)
    app.run(main)
