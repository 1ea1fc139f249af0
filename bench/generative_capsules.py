"""Benchmarks the generative capsule model (Smith et al., 2020) in the
paper's configuration (16 top capsules, 16 templates of 12x12):

- `train_step`: one step of the bound's gradient (both encoders and the
  decoder), the work of `GenerativeCapsuleAutoencoder.fit`;
- `render`: rendering alone (warp and composite 16 templates), forward.

At 28x28 (MNIST) and 40x40 (the affNIST canvas), batch 64, eager and
XLA. Prints one JSON object per measurement, each from its own
subprocess (`peak_memory_mb`: peak less the memory just before the
measured work). Measures; never asserts.

Usage: python -m bench.generative_capsules [--repeats=3]
"""

import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules import models

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`work:size:batch:mode`) here."
)
_CASES = [
    f"{work}:{size}:64:{mode}"
    for work in ("train_step", "render")
    for size in (28, 40)
    for mode in ("eager", "xla")
]


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


def run_case(case):
    work, size, batch, mode = case.split(":")
    size, batch = int(size), int(batch)
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
        [f"--repeats={_REPEATS.value}"],
    )


if __name__ == "__main__":
    app.run(main)
