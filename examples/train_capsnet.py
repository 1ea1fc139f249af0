"""Trains the dynamic-routing CapsNet (Sabour, Frosst, Hinton 2017), or
with `--variant=efficient_capsnet` Efficient-CapsNet (Mazzia et al.
2021: self-attention routing, the same decoder and losses).

Datasets: `mnist` and `fashion_mnist` (TFDS), `procedural_shapes` (built
in), and two generated from MNIST for the paper's experiments:
`multi_mnist` (two overlapping digits on 36x36, sec. 6) and `affine_mnist`
(train on digits placed at random on 40x40, test on random affine maps of
the test digits, an affNIST-like set, sec. 5.2).

On JAX and PyTorch (`KERAS_BACKEND`; TensorFlow need not be installed)
it trains on `mnist`, `fashion_mnist` (prepared-array files in
`TFDS_DATA_DIR`, `datasets.save_image_arrays`) and `procedural_shapes`,
held in memory; the other datasets need TensorFlow.

`--preset` names the model's sizes (`models.CapsNetConfig.PRESETS`:
`paper`, the default, or `small`; `models.EfficientCapsNetConfig.PRESETS`:
`paper`), with any field changed after a colon:
`--preset=small:num_iterations=2,decoder_units=128/256`.

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
from absl import flags

from examples import array_data, fitting, presets, run_flags, run_results, runs
from keras_capsules import datasets, metrics, models, plots

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

# The script's defaults of the run-level flags: the model of `--preset`
# (`models.CapsNetConfig.PRESETS`), Adam's learning rate, decaying by
# `--learning_rate_decay` every epoch.
DEFAULTS = {
    "dataset": "mnist",
    "preset": "paper",
    "epochs": 1,
    "batch_size": 128,
    "learning_rate": 1e-3,
}
(
    _DATASET,
    _PRESET,
    _TRAIN_SIZE,
    _TEST_SIZE,
    _LEARNING_RATE,
    _EXPORT_DIR,
    _FIGURES,
) = run_flags.request(
    __name__,
    "dataset",
    "preset",
    "train_size",
    "test_size",
    "learning_rate",
    "export_dir",
    "figures",
)

_LEARNING_RATE_DECAY = flags.DEFINE_float(
    "learning_rate_decay", 1.0, "Factor applied to the rate every epoch."
)
_VARIANT = flags.DEFINE_enum(
    "variant",
    "capsnet",
    ["capsnet", "efficient_capsnet"],
    "The model: CapsNet or Efficient-CapsNet.",
)
_SHIFT_PIXELS = flags.DEFINE_integer(
    "shift_pixels", 2, "Training images shift by up to this many pixels."
)


_CONFIGS = {
    "capsnet": models.CapsNetConfig,
    "efficient_capsnet": models.EfficientCapsNetConfig,
}
_BUILDERS = {
    "capsnet": models.capsnet,
    "efficient_capsnet": models.efficient_capsnet,
}


def config():
    """The settings (`models.CapsNetConfig` or
    `models.EfficientCapsNetConfig`) of `--variant` and `--preset`."""
    return presets.parse(
        _PRESET.value or DEFAULTS["preset"],
        "preset",
        _CONFIGS[_VARIANT.value].PRESETS,
    )


def check_settings_flags():
    """Raises `app.UsageError` unless `--preset` names CapsNet settings."""
    config()


def build_model(image_shape, num_classes):
    """The model of `--variant` and `--preset` (not yet compiled)."""
    return _BUILDERS[_VARIANT.value](image_shape, num_classes, config())


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
        jit_compile=runs.use_xla(),
    )


def serving(model):
    """The `serve` function of the SavedModel: float32 images `(batch, H,
    W, C)` in [0, 1] -> `{"probabilities": (batch, classes), "capsules":
    (batch, classes, capsule_dim)}`."""

    def serve(images):
        capsules = model.encode(images, training=False)
        return {
            "probabilities": keras.ops.cast(
                model.capsule_length(capsules), "float32"
            ),
            "capsules": keras.ops.cast(capsules, "float32"),
        }

    return serve


def write_figures(model, test_data, model_dir):
    images, _ = next(iter(test_data))
    images = keras.ops.convert_to_numpy(images[:8])
    capsules = model.encode(images, training=False)
    lengths = keras.ops.convert_to_numpy(model.capsule_length(capsules))
    predictions = np.argmax(lengths, axis=-1)
    plots.plot_reconstructions(
        images,
        keras.ops.convert_to_numpy(model.reconstruct(capsules)),
        os.path.join(model_dir, "reconstructions.png"),
        predictions=predictions,
    )

    def decode(masked_capsules):
        return keras.ops.convert_to_numpy(model.decoder(masked_capsules))

    plots.plot_capsule_perturbations(
        decode,
        keras.ops.convert_to_numpy(capsules[0]),
        int(predictions[0]),
        os.path.join(model_dir, "perturbations.png"),
    )


def load_data(name, batch_size, seed):
    """`(image_shape, num_classes, train, tests)` of dataset `name`: the
    training batches as a function of the epoch, whose order and shifts
    come from the seed and the epoch (a killed run resumes with the
    batches it would have seen), and `{split: batches}` to test on.
    `tf.data` pipelines on TensorFlow; in-memory batches (MNIST,
    Fashion-MNIST, the procedural shapes) on the other backends."""
    if not array_data.in_memory():
        image_shape, num_classes, splits = datasets.experiment_info(name)
        train = datasets.load_experiment_epochs(
            name,
            batch_size,
            _SHIFT_PIXELS.value,
            _TRAIN_SIZE.value,
            seed,
            drop_remainder=runs.static_batches(),
        )
        tests = {
            split: datasets.load_experiment(
                name, split, batch_size, size=_TEST_SIZE.value, seed=seed
            ).cache()
            for split in splits
        }
        return image_shape, num_classes, train, tests
    array_data.check_dataset(name, "examples.train_capsnet")
    images, labels = array_data.load_arrays(name, "train", _TRAIN_SIZE.value)
    train = datasets.array_epoch_batches(
        (images, labels),
        batch_size,
        seed,
        runs.static_batches(),
        augment=array_data.shifted(_SHIFT_PIXELS.value),
    )
    tests = {
        split: runs.evaluation_batches(
            array_data.load_arrays(name, split, _TEST_SIZE.value), batch_size
        )
        for split in array_data.test_splits(name)
    }
    num_classes = (
        10 if name != "procedural_shapes" else len(datasets.SHAPE_NAMES)
    )
    return images.shape[1:], num_classes, train, tests


def main(argv):
    del argv
    strategy = runs.set_up(**DEFAULTS)
    config()  # Refuses a --preset that names no settings.
    name = _DATASET.value
    if not array_data.in_memory():
        name = runs.choice(_DATASET, datasets.EXPERIMENTS)
    batch_size, seed = _BATCH_SIZE.value, runs.SEED.value
    image_shape, num_classes, train, tests = load_data(name, batch_size, seed)
    steps_per_epoch = (
        len(train(0)) if array_data.in_memory() else int(train(0).cardinality())
    )
    with strategy.scope():
        model = build_model(image_shape, num_classes)
        compile_model(model, steps_per_epoch, name == "multi_mnist")
    run_results.train_and_evaluate(
        main,
        model,
        train,
        tests,
        "capsnet.keras",
        steps_per_epoch * batch_size,
        name,
        validation_split="test",
        extra_results={"config": model.config.get_config()},
    )
    runs.export_serving(
        model,
        _EXPORT_DIR.value,
        lambda: fitting.tensor_spec(
            (None, *model.image_shape), "float32", "images"
        ),
        serving(model),
    )
    if _FIGURES.value:
        write_figures(model, tests["test"], runs.MODEL_DIR.value)


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
