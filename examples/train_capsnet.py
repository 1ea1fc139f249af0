"""Trains the dynamic-routing CapsNet (Sabour, Frosst, Hinton 2017).

Datasets: `mnist` and `fashion_mnist` (TFDS), `procedural_shapes` (built
in), and two generated from MNIST for the paper's experiments:
`multi_mnist` (two overlapping digits on 36x36, sec. 6) and `affine_mnist`
(train on digits placed at random on 40x40, test on random affine maps of
the test digits, an affNIST-like set, sec. 5.2).

`--model_dir` holds a backup that resumes an interrupted run where it
stopped, the latest model (`capsnet.keras`), TensorBoard logs and
`results.json`; `--export_dir` writes a SavedModel whose `serve` signature
maps images to class probabilities (capsule lengths) and capsules.

Usage:
  python -m examples.train_capsnet --dataset=mnist --epochs=1 \
      --model_dir=runs/capsnet_mnist --export_dir=runs/capsnet_mnist/export
"""

import json
import os
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from examples import distribution
from keras_capsules import datasets, metrics, models, plots

_DATASET = flags.DEFINE_enum(
    "dataset", "mnist", list(datasets.EXPERIMENTS), "Dataset."
)
_EPOCHS = flags.DEFINE_integer("epochs", 1, "Passes over the training set.")
_BATCH_SIZE = flags.DEFINE_integer(
    "batch_size", 128, "Global examples per step (over all replicas)."
)
_LEARNING_RATE = flags.DEFINE_float("learning_rate", 1e-3, "Adam rate.")
_LEARNING_RATE_DECAY = flags.DEFINE_float(
    "learning_rate_decay", 1.0, "Factor applied to the rate every epoch."
)
_SHIFT_PIXELS = flags.DEFINE_integer(
    "shift_pixels", 2, "Training images shift by up to this many pixels."
)
_ROUTING_ITERATIONS = flags.DEFINE_integer(
    "routing_iterations", 3, "Routing iterations r."
)
_RECONSTRUCTION_WEIGHT = flags.DEFINE_float(
    "reconstruction_weight", 0.0005, "Weight of the reconstruction loss."
)
_CONV_FILTERS = flags.DEFINE_integer("conv_filters", 256, "Conv1 channels.")
_PRIMARY_TYPES = flags.DEFINE_integer(
    "primary_capsule_types", 32, "Primary capsule types per position."
)
_DECODER_UNITS = flags.DEFINE_list(
    "decoder_units", ["512", "1024"], "Decoder hidden layer sizes."
)
_TRAIN_SIZE = flags.DEFINE_integer(
    "train_size", None, "Use only the first examples of the training set."
)
_TEST_SIZE = flags.DEFINE_integer(
    "test_size", None, "Use only the first examples of each test set."
)
_MIXED_PRECISION = flags.DEFINE_enum(
    "mixed_precision",
    "none",
    ["none", "mixed_float16", "mixed_bfloat16"],
    "Keras dtype policy.",
)
_JIT_COMPILE = flags.DEFINE_enum(
    "jit_compile",
    "auto",
    ["auto", "true", "false"],
    "Compile the train step with XLA. `auto`: on GPU and TPU only, as "
    "XLA:CPU differentiates CapsNet's 9x9 convolutions ~20x slower than "
    "TensorFlow's own kernels.",
)
_STRATEGY = flags.DEFINE_enum(
    "strategy",
    "default",
    list(distribution.STRATEGIES),
    "tf.distribute strategy.",
)
_MODEL_DIR = flags.DEFINE_string(
    "model_dir", None, "Backups, model, TensorBoard logs and results."
)
_BACKUP_STEPS = flags.DEFINE_integer(
    "backup_steps",
    500,
    "Steps between backups; an interrupted run resumes from the last one.",
)
_EXPORT_DIR = flags.DEFINE_string(
    "export_dir", None, "Where to write the serving SavedModel."
)
_FIGURES = flags.DEFINE_bool(
    "figures", True, "Write reconstructions and perturbation PNGs."
)
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")


def build_model(image_shape, num_classes):
    """The CapsNet the flags describe (not yet compiled)."""
    return models.capsnet(
        image_shape,
        num_classes,
        conv_filters=_CONV_FILTERS.value,
        primary_capsule_types=_PRIMARY_TYPES.value,
        num_iterations=_ROUTING_ITERATIONS.value,
        decoder_units=[int(units) for units in _DECODER_UNITS.value],
        reconstruction_weight=_RECONSTRUCTION_WEIGHT.value,
    )


def compile_model(model, steps_per_epoch, multi_label):
    """Adam with the rate decaying per epoch; margin loss; accuracy (both
    digits right, for MultiMNIST)."""
    learning_rate = keras.optimizers.schedules.ExponentialDecay(
        _LEARNING_RATE.value,
        decay_steps=steps_per_epoch,
        decay_rate=_LEARNING_RATE_DECAY.value,
    )
    accuracy = (
        metrics.PresentClassesAccuracy(name="accuracy")
        if multi_label
        else "accuracy"
    )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        metrics=[accuracy],
        jit_compile=use_xla(),
    )


def use_xla():
    """Whether `--jit_compile` asks for XLA on this machine."""
    if _JIT_COMPILE.value != "auto":
        return _JIT_COMPILE.value == "true"
    accelerators = tf.config.list_logical_devices(
        "GPU"
    ) + tf.config.list_logical_devices("TPU")
    return bool(accelerators)


def make_callbacks(model_dir):
    return [
        # Restores weights, optimizer state and position after a crash.
        keras.callbacks.BackupAndRestore(
            os.path.join(model_dir, "backup"),
            save_freq=_BACKUP_STEPS.value,
        ),
        keras.callbacks.ModelCheckpoint(
            os.path.join(model_dir, "capsnet.keras")
        ),
        keras.callbacks.TensorBoard(os.path.join(model_dir, "logs")),
    ]


def export_serving(model, export_dir):
    """Writes a SavedModel with a `serve` signature: float32 images
    `(batch, H, W, C)` in [0, 1] -> `{"probabilities": (batch, classes),
    "capsules": (batch, classes, capsule_dim)}`."""
    archive = keras.export.ExportArchive()
    archive.track(model)

    def serve(images):
        capsules = model.encode(images, training=False)
        return {
            "probabilities": tf.cast(
                model.capsule_length(capsules), tf.float32
            ),
            "capsules": tf.cast(capsules, tf.float32),
        }

    archive.add_endpoint(
        "serve",
        serve,
        input_signature=[
            tf.TensorSpec((None, *model.image_shape), tf.float32, "images")
        ],
    )
    archive.write_out(export_dir, verbose=False)


def write_figures(model, test_data, model_dir):
    images, _ = next(iter(test_data))
    images = images[:8]
    capsules = model.encode(images, training=False)
    lengths = model.capsule_length(capsules)
    predictions = np.argmax(lengths, axis=-1)
    plots.plot_reconstructions(
        images.numpy(),
        model.reconstruct(capsules).numpy(),
        os.path.join(model_dir, "reconstructions.png"),
        predictions=predictions,
    )

    def decode(masked_capsules):
        return model.decoder(masked_capsules).numpy()

    plots.plot_capsule_perturbations(
        decode,
        capsules[0].numpy(),
        int(predictions[0]),
        os.path.join(model_dir, "perturbations.png"),
    )


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    keras.utils.set_random_seed(_SEED.value)
    if _MIXED_PRECISION.value != "none":
        keras.mixed_precision.set_dtype_policy(_MIXED_PRECISION.value)
    model_dir = _MODEL_DIR.value
    os.makedirs(model_dir, exist_ok=True)
    name = _DATASET.value
    image_shape, num_classes, test_splits = datasets.experiment_info(name)
    train = datasets.load_experiment(
        name,
        "train",
        _BATCH_SIZE.value,
        _SHIFT_PIXELS.value,
        _TRAIN_SIZE.value,
        _SEED.value,
    )
    tests = {
        split: datasets.load_experiment(
            name,
            split,
            _BATCH_SIZE.value,
            size=_TEST_SIZE.value,
            seed=_SEED.value,
        ).cache()
        for split in test_splits
    }
    steps_per_epoch = int(train.cardinality())
    strategy = distribution.make_strategy(_STRATEGY.value)
    with strategy.scope():
        model = build_model(image_shape, num_classes)
        compile_model(model, steps_per_epoch, name == "multi_mnist")
    start = time.time()
    history = model.fit(
        train,
        epochs=_EPOCHS.value,
        validation_data=tests["test"],
        callbacks=make_callbacks(model_dir),
        shuffle=False,  # The pipeline shuffles.
    )
    seconds = time.time() - start
    results = {
        "dataset": name,
        "epochs": _EPOCHS.value,
        "train_seconds": round(seconds, 1),
        "parameters": model.count_params(),
        "flags": {
            flag: getattr(flags.FLAGS, flag)
            for flag in (
                "batch_size",
                "learning_rate",
                "learning_rate_decay",
                "shift_pixels",
                "routing_iterations",
                "reconstruction_weight",
                "conv_filters",
                "primary_capsule_types",
                "train_size",
                "mixed_precision",
                "strategy",
                "seed",
            )
        },
        "history": {
            key: [float(v) for v in values]
            for key, values in history.history.items()
        },
    }
    for split, data in tests.items():
        scores = model.evaluate(data, return_dict=True, verbose=0)
        results[f"{split}_error"] = round(1.0 - scores["accuracy"], 5)
        print(f"{split} error: {results[f'{split}_error']:.2%}")
    model.save(os.path.join(model_dir, "capsnet.keras"))
    with open(os.path.join(model_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    if _EXPORT_DIR.value:
        export_serving(model, _EXPORT_DIR.value)
    if _FIGURES.value:
        write_figures(model, tests["test"], model_dir)
    print(json.dumps({k: v for k, v in results.items() if k != "history"}))


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
