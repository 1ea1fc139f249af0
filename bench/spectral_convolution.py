"""Benchmarks CapsNet's PrimaryCaps convolution (9x9, stride 2, 256 -> 256
channels on 20x20 by default) computed directly (`tf.nn.conv2d`) and
spectrally (`ops.spectral_conv2d`): forward and the gradients to the
images and the kernel, in `tf.function` and XLA.

Prints one JSON object per measurement, each from its own subprocess,
with the multiply-adds per image of the form measured, the rate they
imply, and the ratio of the two forms' multiply-adds that
`PrimaryCapsules(convolution_algorithm="auto")` decides by. Measures;
never asserts.

Usage: python -m bench.spectral_convolution [--repeats=3] [--batch_size=128]
           [--channels=256] [--modes=graph,xla]
"""

import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules.ops.spectral_convolution import (
    convolution_multiply_adds,
    spectral_conv2d,
)

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 128, "Images per step.")
_CHANNELS = flags.DEFINE_integer(
    "channels", 256, "Input and output channels of the convolution."
)
_MODES = flags.DEFINE_list("modes", ["graph", "xla"], "`graph`, `xla`.")
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`form:mode`) in this process."
)

_SIZE, _KERNEL_SIZE, _STRIDES = (20, 20), (9, 9), (2, 2)


def _convolution(form):
    if form == "direct":
        return lambda x, k: tf.nn.conv2d(x, k, _STRIDES, "VALID")
    return lambda x, k: spectral_conv2d(x, k, _STRIDES)


def run_case(case):
    form, mode = case.split(":")
    batch = _BATCH_SIZE.value
    channels = _CHANNELS.value
    image_shape = (*_SIZE, channels)
    kernel_shape = (*_KERNEL_SIZE, channels, channels)
    rng = np.random.default_rng(0)
    images = tf.constant(rng.normal(size=(batch, *image_shape)), tf.float32)
    kernel = tf.Variable(0.01 * rng.normal(size=kernel_shape), dtype=tf.float32)
    convolution = _convolution(form)

    @tf.function(jit_compile=mode == "xla")
    def step():
        with tf.GradientTape() as tape:
            tape.watch(images)
            loss = tf.reduce_sum(tf.square(convolution(images, kernel)))
        return tape.gradient(loss, [images, kernel])

    timing = measure.time_step(
        lambda: [g.numpy() for g in step()], batch, _REPEATS.value
    )
    # Forward and two gradients: three times the forward's work.
    multiply_adds = convolution_multiply_adds(_SIZE, kernel_shape, _STRIDES)
    work = 3 * multiply_adds[form] * batch
    return {
        "name": f"primary_caps_convolution_{form}_forward_backward",
        "mode": mode,
        "shape": [batch, *image_shape],
        "kernel": list(kernel_shape),
        "strides": list(_STRIDES),
        "multiply_adds_per_image": multiply_adds[form],
        "spectral_to_direct_multiply_adds": round(
            multiply_adds["spectral"] / multiply_adds["direct"], 3
        ),
        "gflops": round(2 * work / timing["seconds_per_step"] / 1e9, 1),
        **timing,
    }


def main(argv):
    cases = [
        f"{form}:{mode}"
        for form in ("direct", "spectral")
        for mode in _MODES.value
    ]
    measure.run_cases(
        argv,
        "bench.spectral_convolution",
        _CASE.value,
        run_case,
        cases,
        [
            f"--repeats={_REPEATS.value}",
            f"--batch_size={_BATCH_SIZE.value}",
            f"--channels={_CHANNELS.value}",
        ],
    )


if __name__ == "__main__":
    app.run(main)
