"""Trains the dynamic-routing CapsNet (Sabour, Frosst, Hinton 2017).

Datasets: `mnist` and `fashion_mnist` (TFDS), `procedural_shapes` (built
in), and two generated from MNIST for the paper's experiments:
`multi_mnist` (two overlapping digits on 36x36, sec. 6) and `affine_mnist`
(train on digits placed at random on 40x40, test on random affine maps of
the test digits, an affNIST-like set, sec. 5.2).

`--model_dir` holds a backup that resumes an interrupted run where it
stopped, the latest model (`capsnet.keras`), TensorBoard logs and
`results.json` (`examples/runs.py`); `--export_dir` writes a SavedModel
whose `serve` signature maps images to class probabilities (capsule
lengths) and capsules.

Usage:
  python -m examples.train_capsnet --dataset=mnist --epochs=1 \
      --model_dir=runs/capsnet_mnist --export_dir=runs/capsnet_mnist/export
"""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import flags

from examples import runs
from keras_capsules import datasets, metrics, models, plots

# The script's defaults of the flags of `examples/runs.py`: Adam's
# learning rate, decaying by `--learning_rate_decay` every epoch.
DEFAULTS = {
    "dataset": "mnist",
    "epochs": 1,
    "batch_size": 128,
    "learning_rate": 1e-3,
    "routing_iterations": 3,
}

_LEARNING_RATE_DECAY = flags.DEFINE_float(
    "learning_rate_decay", 1.0, "Factor applied to the rate every epoch."
)
_SHIFT_PIXELS = flags.DEFINE_integer(
    "shift_pixels", 2, "Training images shift by up to this many pixels."
)
_RECONSTRUCTION_WEIGHT = flags.DEFINE_float(
    "reconstruction_weight", 0.0005, "Weight of the reconstruction loss."
)
_CONV_FILTERS = flags.DEFINE_integer("conv_filters", 256, "Conv1 channels.")
_PRIMARY_TYPES = flags.DEFINE_integer(
    "primary_capsule_types", 32, "Primary capsule types per position."
)
_PRIMARY_CONVOLUTION = flags.DEFINE_enum(
    "primary_convolution",
    "auto",
    ["auto", "direct", "spectral"],
    "How PrimaryCaps' 9x9 convolution is computed (`PrimaryCapsules`' "
    "`convolution_algorithm`): auto takes the spectral form on a CPU.",
)
_DECODER_UNITS = flags.DEFINE_list(
    "decoder_units", ["512", "1024"], "Decoder hidden layer sizes."
)


def build_model(image_shape, num_classes):
    """The CapsNet the flags describe (not yet compiled)."""
    return models.capsnet(
        image_shape,
        num_classes,
        conv_filters=_CONV_FILTERS.value,
        primary_capsule_types=_PRIMARY_TYPES.value,
        primary_convolution_algorithm=_PRIMARY_CONVOLUTION.value,
        num_iterations=runs.ROUTING_ITERATIONS.value,
        decoder_units=[int(units) for units in _DECODER_UNITS.value],
        reconstruction_weight=_RECONSTRUCTION_WEIGHT.value,
    )


def compile_model(model, steps_per_epoch, multi_label):
    """Adam with the rate decaying per epoch; margin loss; accuracy (both
    digits right, for MultiMNIST)."""
    learning_rate = keras.optimizers.schedules.ExponentialDecay(
        runs.LEARNING_RATE.value,
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
        jit_compile=runs.use_xla(),
    )


def serving(model):
    """The `serve` function of the SavedModel: float32 images `(batch, H,
    W, C)` in [0, 1] -> `{"probabilities": (batch, classes), "capsules":
    (batch, classes, capsule_dim)}`."""

    def serve(images):
        capsules = model.encode(images, training=False)
        return {
            "probabilities": tf.cast(
                model.capsule_length(capsules), tf.float32
            ),
            "capsules": tf.cast(capsules, tf.float32),
        }

    return serve


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
    del argv
    strategy = runs.set_up(**DEFAULTS)
    name = runs.dataset(datasets.EXPERIMENTS)
    batch_size, seed = runs.BATCH_SIZE.value, runs.SEED.value
    image_shape, num_classes, test_splits = datasets.experiment_info(name)
    # Each epoch's order and shifts come from the seed and the epoch: a
    # killed run resumes with the batches it would have seen.
    train = datasets.load_experiment_epochs(
        name,
        batch_size,
        _SHIFT_PIXELS.value,
        runs.TRAIN_SIZE.value,
        seed,
        drop_remainder=runs.static_batches(),
    )
    tests = {
        split: datasets.load_experiment(
            name, split, batch_size, size=runs.TEST_SIZE.value, seed=seed
        ).cache()
        for split in test_splits
    }
    steps_per_epoch = int(train(0).cardinality())
    with strategy.scope():
        model = build_model(image_shape, num_classes)
        compile_model(model, steps_per_epoch, name == "multi_mnist")
    runs.train_and_evaluate(
        main,
        model,
        train,
        tests,
        "capsnet.keras",
        steps_per_epoch * batch_size,
        name,
        validation_split="test",
    )
    runs.export_serving(
        model,
        tf.TensorSpec((None, *model.image_shape), tf.float32, "images"),
        serving(model),
    )
    if runs.FIGURES.value:
        write_figures(model, tests["test"], runs.MODEL_DIR.value)


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
