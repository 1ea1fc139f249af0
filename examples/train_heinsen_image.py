"""Trains Heinsen's (2019) image capsule network: coordinate channels,
six convolutions, routing of a variable number of capsules, then class
capsules.

Two presets (`--preset`) set the defaults of `--epochs`, `--batch_size`,
`--optimizer`, `--learning_rate` (the cycle's peak) and `--mixup_alpha`;
any of them given explicitly wins:

- `paper`: the paper's, as the author's code runs it: 50 epochs of
  batch 20, RAdam on one cycle (learning rate 1e-5 -> 5e-4, `beta_1`
  0.9 -> 0.81), mixup 0.2.
- `cpu`: one that converges within about 30 minutes on 2 CPU cores
  (MNIST, Fashion-MNIST): see `PRESETS`.

`--beta_1_schedule=paper_text`, `--initialization=keras` and
`--routing_epsilon=1e-9` switch the three places where the author's code
(the default) and the paper's text or this library's first version differ.

Datasets: `smallnorb` (TFDS; stereo pairs padded by 16 px and randomly
cropped to 96x96 for training, as in the paper), `mnist`, `fashion_mnist`
(TFDS) and `procedural_shapes` (built in).

`--model_dir` holds a backup that resumes an interrupted run where it
stopped, the latest model (`heinsen_image.keras`), TensorBoard logs and
`results.json` (`examples/runs.py`; the test split is also evaluated
after each epoch); `--export_dir` writes a SavedModel whose `serve`
signature maps images to class probabilities and scores.

Usage:
  python -m examples.train_heinsen_image --dataset=fashion_mnist \
      --epochs=2 --model_dir=runs/heinsen_fashion
"""

import tensorflow as tf
from absl import flags

from examples import heinsen_training, run_flags, run_results, runs
from keras_capsules import datasets, models, recipes

# The run-level flags `runs.fit` reads.
_EPOCHS, _BATCH_SIZE, _BACKUP_STEPS = run_flags.request(
    __name__, *run_flags.TRAINING
)

# What each preset sets; flags given explicitly win.
PRESETS = {
    "paper": {
        "epochs": 50,
        "batch_size": 20,
        "optimizer": "radam",
        "learning_rate": 5e-4,
        "mixup_alpha": 0.2,
    },
    "cpu": {
        "epochs": 7,
        "batch_size": 20,
        "optimizer": "adam",
        "learning_rate": 1e-3,
        "mixup_alpha": 0.0,
    },
}
DEFAULTS = {
    "dataset": "mnist",
    "preset": "paper",
    "routing_iterations": 3,
    **PRESETS["paper"],
}
(
    _DATASET,
    _PRESET,
    _TRAIN_SIZE,
    _TEST_SIZE,
    _ROUTING_ITERATIONS,
    _EXPORT_DIR,
) = run_flags.request(
    __name__,
    "dataset",
    "preset",
    "train_size",
    "test_size",
    "routing_iterations",
    "export_dir",
)

_OPTIMIZER = flags.DEFINE_enum(
    "optimizer",
    "radam",
    list(heinsen_training.OPTIMIZERS),
    "`radam` (paper) with `beta_1` on the cycle, or `adam`.",
)
_INITIALIZATION = flags.DEFINE_enum(
    "initialization",
    "author",
    ["author", "keras"],
    "Convolutions: `author` Kaiming-normal 3x3 kernels and PyTorch's "
    "defaults elsewhere; `keras` Glorot kernels, zero biases.",
)
_PADDING = flags.DEFINE_enum(
    "padding",
    None,
    ["same", "valid"],
    "Padding of the 3x3 convolutions (default: `valid`, the author's, for "
    "smallnorb; `same` otherwise, as 28x28 images are too small for it).",
)
_PAD_PIXELS = flags.DEFINE_integer(
    "pad_pixels",
    None,
    "Pad-and-random-crop of training images (default: 16 for smallnorb, "
    "0 otherwise).",
)
_FILTERS = flags.DEFINE_integer("filters", 64, "Channels per convolution.")
_NUM_PARTS = flags.DEFINE_integer(
    "num_parts", 64, "Capsule types per location and out of routing 1."
)


def set_up_run():
    """Applies the script's defaults and then its preset's (flags given
    keep their values); returns the run's `tf.distribute.Strategy`."""
    runs.set_defaults(**DEFAULTS)
    preset = runs.choice(_PRESET, PRESETS)
    return runs.set_up(**{**DEFAULTS, **PRESETS[preset]})


def main(argv):
    del argv
    strategy = set_up_run()
    name = runs.choice(_DATASET, datasets.heinsen_experiments.DATASETS)
    batch_size = _BATCH_SIZE.value
    padding = _PADDING.value or ("valid" if name == "smallnorb" else "same")
    image_shape, num_classes, test_splits, _ = (
        datasets.heinsen_experiments.dataset_info(name)
    )
    seed = runs.SEED.value
    # Each epoch's order and crops come from the seed and the epoch: a
    # killed run resumes with the batches it would have seen.
    train = datasets.load_heinsen_image_epochs(
        name,
        batch_size,
        _TRAIN_SIZE.value,
        seed,
        _PAD_PIXELS.value,
        drop_remainder=runs.static_batches(),
    )
    tests = {
        split: datasets.load_heinsen_images(
            name, split, batch_size, _TEST_SIZE.value
        ).cache()
        for split in test_splits
    }
    steps_per_epoch = int(train(0).cardinality())
    with strategy.scope():
        classifier = models.heinsen_image(
            (None, None, image_shape[-1]),
            num_classes,
            filters=_FILTERS.value,
            num_parts=_NUM_PARTS.value,
            num_iterations=_ROUTING_ITERATIONS.value,
            initialization=_INITIALIZATION.value,
            padding=padding,
            routing_epsilon=heinsen_training.ROUTING_EPSILON.value,
        )
        model = recipes.MixupClassifier(
            classifier, alpha=heinsen_training.MIXUP_ALPHA.value, seed=seed
        )
        heinsen_training.compile_for_run(
            model, steps_per_epoch, optimizer=_OPTIMIZER.value
        )
    run_results.train_and_evaluate(
        main,
        model,
        train,
        tests,
        "heinsen_image.keras",
        steps_per_epoch * batch_size,
        name,
        validation_split="test",
        extra_results={"padding": padding},
    )
    runs.export_serving(
        model,
        _EXPORT_DIR.value,
        tf.TensorSpec(
            (None, None, None, image_shape[-1]), tf.float32, "images"
        ),
    )


if __name__ == "__main__":
    runs.run(main, **DEFAULTS)
