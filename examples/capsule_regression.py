"""Trains capsule regression (Saul) by EM or SGD and reports test error.

Follows the paper's protocol: images projected to p = 196 principal
directions of the training images, the first 50K training images to train
and the last 10K to validate, five rounds of thresholded EM with momentum.

`--model_dir` receives `results.json` (`examples/runs.py`; EM's history
is per iteration, and every split is evaluated), the figures, and EM's
state `em_state.npz`, from which a restarted run resumes (SGD: the
backup, and the best model `capsule_regression.keras`).

Usage:
  python -m examples.capsule_regression --dataset=mnist --capsule_dim=2 \
      --model_dir=runs/mnist_d2
  python -m examples.capsule_regression --dataset=procedural_shapes \
      --architecture=all_vs_all --capsule_dim=2 --model_dir=runs/shapes
"""

import os
import time

import keras
import tensorflow as tf
from absl import app, flags

from examples import run_flags, run_results, runs
from keras_capsules import datasets, trainers
from keras_capsules.layers import CapsuleRegression

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

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
    "jit_compile": "true",
}
_DATASET, _TRAIN_SIZE, _CAPSULE_DIM, _LEARNING_RATE, _FIGURES = (
    run_flags.request(
        __name__,
        "dataset",
        "train_size",
        "capsule_dim",
        "learning_rate",
        "figures",
    )
)
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
_MOMENTUM = flags.DEFINE_float(
    "momentum", trainers.EMSchedule().momentum, "EM momentum gamma (eq. 27)."
)
_STATISTICS_BATCH = flags.DEFINE_integer(
    "statistics_batch",
    10000,
    "EM: examples per batch when summing sufficient statistics.",
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
    """Cached batches of `(features, labels)`, in order."""
    dataset = tf.data.Dataset.from_tensor_slices((features, labels))
    return dataset.batch(batch_size).cache()


def train_em(main, name, features, architecture):
    """Fits by EM, resuming from `em_state.npz` in `--model_dir`; writes
    `results.json` and returns the multiclass layer (or None)."""
    trainer = trainers.CapsuleRegressionEM(
        num_classes=int(features["train"][1].max()) + 1,
        capsule_dim=_CAPSULE_DIM.value,
        architecture=architecture,
        schedule=trainers.EMSchedule(
            momentum=_MOMENTUM.value, max_iterations=_MAX_ITERATIONS.value
        ),
        use_offset=_USE_OFFSET.value,
        seed=runs.SEED.value,
    )
    batch = _STATISTICS_BATCH.value
    start = time.time()
    history = trainer.fit(
        as_dataset(*features["train"], batch),
        as_dataset(*features["validation"], batch),
        checkpoint_path=os.path.join(runs.MODEL_DIR.value, "em_state.npz"),
    )
    train_seconds = round(time.time() - start, 1)
    evaluation = {
        split: {
            "accuracy": round(
                1.0 - float(trainer.evaluate(as_dataset(x, y, batch))), 5
            )
        }
        for split, (x, y) in features.items()
    }
    run_results.write_results(
        {
            **run_results.describe_run(main, name, int(trainer.kernel.size)),
            "train_examples": len(features["train"][1]),
            "train_seconds": train_seconds,
            "history": history,
            "evaluation": evaluation,
        }
    )
    return trainer.to_layer() if architecture == "multiclass" else None


def train_sgd(main, name, features):
    """Fits the multiclass layer by Adam, stopping early on the
    validation accuracy; writes `results.json` and returns the layer."""
    x, y = features["train"]
    model = keras.Sequential([keras.Input((x.shape[1],))])
    model.add(
        CapsuleRegression(
            int(y.max()) + 1,
            _CAPSULE_DIM.value,
            use_offset=_USE_OFFSET.value,
        )
    )
    model.compile(
        keras.optimizers.Adam(_LEARNING_RATE.value),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
        jit_compile=runs.use_xla(),
    )
    batch = _BATCH_SIZE.value
    run_results.train_and_evaluate(
        main,
        model,
        runs.epoch_batches((x, y), batch, runs.SEED.value),
        {split: as_dataset(a, b, 4096) for split, (a, b) in features.items()},
        "capsule_regression.keras",
        len(y),
        name,
        extra_callbacks=[
            keras.callbacks.EarlyStopping(
                "val_accuracy", patience=5, restore_best_weights=True
            )
        ],
        validation_split="validation",
    )
    return model.layers[-1]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    strategy = runs.set_up(**DEFAULTS)
    name = runs.choice(_DATASET, DATASETS)
    if _TRAINING.value == "sgd" and _ARCHITECTURE.value != "multiclass":
        raise app.UsageError("--training=sgd trains the multiclass model only.")
    splits = load_splits(name, _TRAIN_SIZE.value, runs.SEED.value)
    features = project_splits(splits, _PROJECTION_DIM.value, _CENTER.value)
    with strategy.scope():
        if _TRAINING.value == "em":
            layer = train_em(main, name, features, _ARCHITECTURE.value)
        else:
            layer = train_sgd(main, name, features)
    if _FIGURES.value and layer is not None:
        write_figures(layer, splits, features, runs.MODEL_DIR.value)


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
    runs.run(main, **DEFAULTS)
