"""Trains Heinsen's (2019) image capsule network: coordinate channels,
six convolutions, routing of a variable number of capsules, then class
capsules.

Two recipes (`--recipe`); any of their flags given explicitly wins:

- `paper`: the paper's, as the author's code runs it: 50 epochs of
  batch 20, RAdam on one cycle (learning rate 1e-5 -> 5e-4, `beta_1`
  0.9 -> 0.81), mixup 0.2.
- `cpu`: one that converges within about 30 minutes on 2 CPU cores
  (MNIST, Fashion-MNIST): see `RECIPES`.

`--beta_1_schedule=paper_text`, `--initialization=keras` and
`--routing_epsilon=1e-9` switch the three places where the author's code
(the default) and the paper's text or this library's first version differ.

Datasets: `smallnorb` (TFDS; stereo pairs padded by 16 px and randomly
cropped to 96x96 for training, as in the paper), `mnist`, `fashion_mnist`
(TFDS) and `procedural_shapes` (built in).

`--model_dir` holds a backup that resumes an interrupted run where it
stopped, the latest model (`heinsen_image.keras`), TensorBoard logs and
`results.json`; `--export_dir` writes a SavedModel whose `serve` signature
maps images to class probabilities and scores.

Usage:
  python -m examples.train_heinsen_image --dataset=fashion_mnist \
      --epochs=2 --model_dir=runs/heinsen_fashion
"""

import os

import keras
import tensorflow as tf
from absl import app, flags

from examples import distribution, heinsen_training
from keras_capsules import datasets, models, recipes

_DATASET = flags.DEFINE_enum(
    "dataset",
    "mnist",
    list(datasets.heinsen_experiments.DATASETS),
    "Dataset.",
)
# What each recipe sets; explicit flags override.
RECIPES = {
    "paper": {
        "epochs": 50,
        "batch_size": 20,
        "optimizer": "radam",
        "peak_learning_rate": 5e-4,
        "mixup_alpha": 0.2,
    },
    "cpu": {
        "epochs": 7,
        "batch_size": 20,
        "optimizer": "adam",
        "peak_learning_rate": 1e-3,
        "mixup_alpha": 0.0,
    },
}

_RECIPE = flags.DEFINE_enum(
    "recipe", "paper", list(RECIPES), "Defaults of the flags below."
)
_EPOCHS = flags.DEFINE_integer("epochs", None, "Passes (paper: 50).")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", None, "Paper: 20.")
_OPTIMIZER = flags.DEFINE_enum(
    "optimizer",
    None,
    list(heinsen_training.OPTIMIZERS),
    "`radam` (paper) with `beta_1` on the cycle, or `adam`.",
)
_PEAK_LEARNING_RATE = flags.DEFINE_float(
    "peak_learning_rate", None, "Top of the one-cycle schedule (paper 5e-4)."
)
_MIXUP_ALPHA = flags.DEFINE_float(
    "mixup_alpha", None, "Mixup's Beta(alpha, alpha); 0 turns it off."
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
_ROUTING_ITERATIONS = flags.DEFINE_integer(
    "routing_iterations", 3, "Iterations of each routing."
)
_TRAIN_SIZE = flags.DEFINE_integer(
    "train_size", None, "Use only the first training examples."
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
    "Compile the train step with XLA (`auto`: on GPU and TPU only).",
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
_SEED = flags.DEFINE_integer("seed", 0, "Random seed.")


def recipe_value(flag):
    """The flag's value if given, else the recipe's."""
    value = getattr(flags.FLAGS, flag)
    return RECIPES[_RECIPE.value][flag] if value is None else value


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    keras.utils.set_random_seed(_SEED.value)
    if _MIXED_PRECISION.value != "none":
        keras.mixed_precision.set_dtype_policy(_MIXED_PRECISION.value)
    model_dir = _MODEL_DIR.value
    os.makedirs(model_dir, exist_ok=True)
    name = _DATASET.value
    epochs, batch_size = recipe_value("epochs"), recipe_value("batch_size")
    padding = _PADDING.value or ("valid" if name == "smallnorb" else "same")
    image_shape, num_classes, test_splits, _ = (
        datasets.heinsen_experiments.dataset_info(name)
    )
    strategy = distribution.make_strategy(_STRATEGY.value)
    train = datasets.load_heinsen_images(
        name,
        "train",
        batch_size,
        _TRAIN_SIZE.value,
        _SEED.value,
        _PAD_PIXELS.value,
    )
    tests = {
        split: datasets.load_heinsen_images(
            name, split, batch_size, _TEST_SIZE.value
        ).cache()
        for split in test_splits
    }
    steps_per_epoch = int(train.cardinality())
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
            classifier, alpha=recipe_value("mixup_alpha"), seed=_SEED.value
        )
        heinsen_training.compile_classifier(
            model,
            epochs * steps_per_epoch,
            recipe_value("peak_learning_rate"),
            heinsen_training.use_xla(_JIT_COMPILE.value),
            optimizer=recipe_value("optimizer"),
            beta_1_schedule=heinsen_training.BETA_1_SCHEDULE.value,
        )
    summary = {
        "dataset": name,
        "epochs": epochs,
        "flags": {
            **{flag: recipe_value(flag) for flag in RECIPES["paper"]},
            "padding": padding,
            **{
                flag: getattr(flags.FLAGS, flag)
                for flag in (
                    "recipe",
                    "beta_1_schedule",
                    "initialization",
                    "routing_epsilon",
                    "pad_pixels",
                    "filters",
                    "num_parts",
                    "routing_iterations",
                    "train_size",
                    "mixed_precision",
                    "strategy",
                    "seed",
                )
            },
        },
    }
    heinsen_training.train_and_evaluate(
        model,
        train,
        tests,
        epochs,
        model_dir,
        "heinsen_image.keras",
        _BACKUP_STEPS.value,
        summary,
    )
    if _EXPORT_DIR.value:
        heinsen_training.export_serving(
            model,
            _EXPORT_DIR.value,
            tf.TensorSpec(
                (None, None, None, image_shape[-1]), tf.float32, "images"
            ),
        )


if __name__ == "__main__":
    flags.mark_flag_as_required("model_dir")
    app.run(main)
