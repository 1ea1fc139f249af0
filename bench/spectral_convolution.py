"""Benchmarks CapsNet's PrimaryCaps convolution (9x9, stride 2, 256 -> 256
channels on 20x20) computed directly (`tf.nn.conv2d`) and spectrally
(`ops.spectral_conv2d`): forward and the gradients to the images and the
kernel, in `tf.function` and XLA.

Prints one JSON object per measurement, each from its own subprocess,
with the multiply-adds per image of the form measured and the rate they
imply. Measures; never asserts.

Usage: python -m bench.spectral_convolution [--repeats=3] [--batch_size=128]
"""

import json

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
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`form:mode`) in this process."
)

_IMAGE, _KERNEL, _STRIDES = (20, 20, 256), (9, 9, 256, 256), (2, 2)
_CASES = [
    f"{form}:{mode}"
    for form in ("direct", "spectral")
    for mode in ("graph", "xla")
]


def _convolution(form):
    if form == "direct":
        return lambda x, k: tf.nn.conv2d(x, k, _STRIDES, "VALID")
    return lambda x, k: spectral_conv2d(x, k, _STRIDES)


def run_case(case):
    form, mode = case.split(":")
    batch = _BATCH_SIZE.value
    rng = np.random.default_rng(0)
    images = tf.constant(rng.normal(size=(batch, *_IMAGE)), tf.float32)
    kernel = tf.Variable(0.01 * rng.normal(size=_KERNEL), dtype=tf.float32)
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
    multiply_adds = convolution_multiply_adds(_IMAGE[:2], _KERNEL, _STRIDES)
    work = 3 * multiply_adds[form] * batch
    return {
        "name": f"primary_caps_convolution_{form}_forward_backward",
        "mode": mode,
        "shape": [batch, *_IMAGE],
        "kernel": list(_KERNEL),
        "strides": list(_STRIDES),
        "multiply_adds_per_image": multiply_adds[form],
        "gflops": round(2 * work / timing["seconds_per_step"] / 1e9, 1),
        **timing,
    }


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if _CASE.value:
        print(json.dumps(run_case(_CASE.value)), flush=True)
        return
    measure.run_cases_in_subprocesses(
        "bench.spectral_convolution",
        _CASES,
        [f"--repeats={_REPEATS.value}", f"--batch_size={_BATCH_SIZE.value}"],
    )


if __name__ == "__main__":
    app.run(main)
