"""Benchmarks the generative capsule model (Smith et al., 2020) in the
paper's configuration (16 top capsules, 16 templates of 12x12):

- `train_step`: one step of the bound's gradient (both encoders and the
  decoder), the work of `GenerativeCapsuleAutoencoder.fit`;
- `render`: rendering alone (warp and composite 16 templates), forward;
- `first_fit`: the seconds a fresh model's first `fit` takes over two
  batches (tracing, XLA's compilation and the two steps) and how many
  times it traced `train_step` (`--optimizer_in_trace` leaves the
  optimizer for Keras to build inside the first trace, as before
  `recipes.gradient_step.build_optimizer`).

At 28x28 (MNIST) and 40x40 (the affNIST canvas), batch 64, eager and
XLA (`first_fit`: 28x28, `tf.function` and XLA). Prints one JSON object
per measurement, each from its own subprocess (`peak_memory_mb`: peak
less the memory just before the measured work). Measures; never
asserts.

Usage: python -m bench.generative_capsules [--repeats=3]
"""

import functools
import time

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules import models

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`work:size:batch:mode`) here."
)
_OPTIMIZER_IN_TRACE = flags.DEFINE_bool(
    "optimizer_in_trace",
    False,
    "first_fit: let Keras build the optimizer in the first trace of the "
    "training step (which then traces twice), for comparison.",
)
_CASES = [
    f"{work}:{size}:64:{mode}"
    for work in ("train_step", "render")
    for size in (28, 40)
    for mode in ("eager", "xla")
] + ["first_fit:28:64:graph", "first_fit:28:64:xla"]


def _step_function(work, size, batch, mode):
    model = models.generative_capsule_autoencoder(
        image_shape=(size, size, 1), seed=0
    )
    rng = np.random.default_rng(0)
    images = tf.constant(rng.uniform(size=(batch, size, size, 1)), tf.float32)
    presences = tf.constant(rng.uniform(size=(batch, 16)), tf.float32)
    poses = tf.constant(rng.normal(size=(batch, 16, 6)) * 0.2, tf.float32)
    seed = tf.constant([1, 2])

    def train_step():
        with tf.GradientTape() as tape:
            loss = -tf.reduce_mean(model.elbo_terms(images, seed)["elbo"])
        return tape.gradient(loss, model.trainable_variables)

    def render():
        return [model.decoder([presences, poses])]

    step = train_step if work == "train_step" else render
    if mode == "xla":
        step = tf.function(step, jit_compile=True)
    return lambda: [g.numpy() for g in step()]


def _first_fit(size, batch, mode):
    """Seconds of a fresh model's first `fit` over two batches, and the
    number of times it traced `train_step`."""
    model = models.generative_capsule_autoencoder(
        image_shape=(size, size, 1), seed=0
    )
    if _OPTIMIZER_IN_TRACE.value:
        # Keras's own, without the model's `build_optimizer` first.
        model.make_train_function = functools.partial(
            keras.Model.make_train_function, model
        )
    traces = []
    train_step = model.train_step

    def counted_train_step(data):
        traces.append(1)
        return train_step(data)

    model.train_step = counted_train_step
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3), jit_compile=mode == "xla"
    )
    images = np.random.default_rng(0).uniform(size=(2 * batch, size, size, 1))
    start = time.perf_counter()
    model.fit(images.astype(np.float32), batch_size=batch, verbose=0)
    return {
        "first_fit_seconds": round(time.perf_counter() - start, 2),
        "steps": 2,
        "train_step_traces": len(traces),
        "optimizer_in_trace": _OPTIMIZER_IN_TRACE.value,
        "device": measure.device_name(),
    }


def run_case(case):
    work, size, batch, mode = case.split(":")
    size, batch = int(size), int(batch)
    if work == "first_fit":
        timing = _first_fit(size, batch, mode)
    else:
        step = _step_function(work, size, batch, mode)
        timing = measure.time_step(step, batch, _REPEATS.value)
    return {
        "name": f"generative_capsules_{work}",
        "mode": mode,
        "shape": {
            "image": [size, size, 1],
            "top_capsules": 16,
            "templates": 16,
            "template_size": 12,
        },
        **timing,
    }


def main(argv):
    measure.run_cases(
        argv,
        "bench.generative_capsules",
        _CASE.value,
        run_case,
        _CASES,
        [
            f"--repeats={_REPEATS.value}",
            f"--optimizer_in_trace={_OPTIMIZER_IN_TRACE.value}",
        ],
    )


if __name__ == "__main__":
    app.run(main)
