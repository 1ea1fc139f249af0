"""Benchmarks the matrix-capsule layers, forward plus backward, eager and
XLA, batch 32:

- every capsule layer of the paper's model at 32x32 inputs (A=B=C=D=32):
  `conv_caps1` (32 types on 14x14 -> 32 on 6x6, stride 2), `conv_caps2`
  (6x6 -> 4x4), `class_capsules` (32 types on 4x4 -> 10, coordinate
  addition), and the whole model;
- the same for the small model (A=64, B=8, C=D=16);
- one XLA training step (spread loss, Adam) of each whole model in its
  default recipe, whose peak memory is what training needs
  (`--image_size=28` for MNIST's);
- DESIGN.md's shapes: `design_conv` (K=3, 8 -> 16 types, 6x6 -> 4x4) and
  `design_class` (16 types on 3x3 -> 10, coordinate addition).

Prints one JSON object per measurement, each from its own subprocess so
that its peak memory is its own (`peak_memory_mb`: peak less the memory
just before the measured work). Measures; never asserts.

Usage: python -m bench.em_routing [--repeats=3] [--batch_size=32]
"""

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules import layers, losses, models

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 32, "Batch size.")
_IMAGE_SIZE = flags.DEFINE_integer(
    "image_size", 32, "Image side of the whole-model cases (MNIST: 28)."
)
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`name:mode`) in this process."
)

# name: (layer factory, child grid, child types); None grid: whole model.
_LAYERS = {
    "full_conv_caps1": (lambda: layers.ConvMatrixCapsules(32, 3, 2), 14, 32),
    "full_conv_caps2": (lambda: layers.ConvMatrixCapsules(32, 3, 1), 6, 32),
    "full_class_capsules": (lambda: layers.MatrixCapsuleEMRouting(10), 4, 32),
    "full_model": (
        lambda: models.matrix_capsnet(input_shape=_image_shape()),
        None,
        None,
    ),
    "small_conv_caps1": (lambda: layers.ConvMatrixCapsules(16, 3, 2), 14, 8),
    "small_conv_caps2": (lambda: layers.ConvMatrixCapsules(16, 3, 1), 6, 16),
    "small_class_capsules": (
        lambda: layers.MatrixCapsuleEMRouting(10),
        4,
        16,
    ),
    "small_model": (
        lambda: models.small_matrix_capsnet(input_shape=_image_shape()),
        None,
        None,
    ),
    "design_conv": (lambda: layers.ConvMatrixCapsules(16, 3, 1), 6, 8),
    "design_class": (lambda: layers.MatrixCapsuleEMRouting(10), 3, 16),
}
_CASES = [f"{name}:{mode}" for name in _LAYERS for mode in ("eager", "xla")] + [
    "full_model:train",
    "small_model:train",
]


def _image_shape():
    return (_IMAGE_SIZE.value, _IMAGE_SIZE.value, 1)


def _inputs(batch, grid, types):
    rng = np.random.default_rng(0)
    if grid is None:
        return tf.constant(
            rng.normal(size=(batch, *_image_shape())), tf.float32
        )
    return [
        tf.constant(rng.normal(size=(batch, grid, grid, types)), tf.float32),
        tf.constant(
            rng.normal(size=(batch, grid, grid, types, 4, 4)), tf.float32
        ),
    ]


def _train_step_function(name, batch):
    """One XLA training step of a whole model: spread loss, Adam."""
    model = _LAYERS[name][0]()
    model.compile(optimizer="adam", loss=losses.SpreadLoss(), jit_compile=True)
    images = _inputs(batch, None, None)
    labels = np.arange(batch) % 10
    return model, lambda: model.train_on_batch(images, labels)


def _step_function(name, batch, mode):
    """A no-argument function running one forward+backward pass (`train`:
    a whole training step)."""
    if mode == "train":
        return _train_step_function(name, batch)
    factory, grid, types = _LAYERS[name]
    layer = factory()
    inputs = _inputs(batch, grid, types)
    return layer, measure.forward_backward_step(layer, inputs, mode)


def run_case(case):
    name, mode = case.split(":")
    batch = _BATCH_SIZE.value
    layer, step = _step_function(name, batch, mode)
    timing = measure.time_step(step, batch, _REPEATS.value)
    _, grid, types = _LAYERS[name]
    shape = (
        {"image": list(_image_shape())}
        if grid is None
        else {"grid": grid, "child_types": types}
    )
    return {
        "name": f"em_routing_{name}_"
        + ("train_step" if mode == "train" else "forward_backward"),
        "mode": mode,
        "shape": shape,
        "parameters": int(
            sum(np.prod(w.shape) for w in layer.trainable_weights)
        ),
        **timing,
    }


def main(argv):
    keras.utils.set_random_seed(0)
    measure.run_cases(
        argv,
        "bench.em_routing",
        _CASE.value,
        run_case,
        _CASES,
        [
            f"--repeats={_REPEATS.value}",
            f"--batch_size={_BATCH_SIZE.value}",
            f"--image_size={_IMAGE_SIZE.value}",
        ],
    )


if __name__ == "__main__":
    app.run(main)
