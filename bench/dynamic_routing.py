"""Benchmarks dynamic routing: the layer at CapsNet's shape and CapsNet's
training step, forward plus backward, eager, graph and XLA.

Prints one JSON object per measurement. Each measurement runs in its own
subprocess, so that its peak memory (resident set on CPU, allocator peak
on GPU) is its own; `peak_memory_mb` is that peak less the process's
memory just before the measured work. Measures; never asserts.

Usage: python -m bench.dynamic_routing [--repeats=3] [--batch_size=128]
"""

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import measure
from keras_capsules import layers, models

_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repetitions; best kept.")
_BATCH_SIZE = flags.DEFINE_integer("batch_size", 128, "Examples per step.")
_CASE = flags.DEFINE_string(
    "case", None, "Run one measurement (`target:mode`) in this process."
)

# CapsNet's DigitCaps: 1152 primary capsules of 8-D -> 10 of 16-D.
_INPUTS, _INPUT_DIM, _OUTPUTS, _OUTPUT_DIM = 1152, 8, 10, 16
_CASES = [
    f"{target}:{mode}"
    for target in ("layer", "capsnet")
    for mode in ("eager", "graph", "xla")
]


def _step_function(target, mode, batch):
    """Returns a no-argument function running one forward+backward pass."""
    rng = np.random.default_rng(0)
    if target == "layer":
        layer = layers.DynamicRouting(_OUTPUTS, _OUTPUT_DIM)
        logits = tf.constant(rng.normal(size=(batch, _INPUTS)), tf.float32)
        poses = tf.constant(
            rng.uniform(-0.3, 0.3, (batch, _INPUTS, 1, _INPUT_DIM)),
            tf.float32,
        )
        layer([logits[:1], poses[:1]])

        def step():
            with tf.GradientTape() as tape:
                tape.watch(poses)
                _, capsules = layer([logits, poses])
                loss = tf.reduce_sum(tf.square(capsules))
            return tape.gradient(loss, [poses, layer.kernel])

        if mode != "eager":
            step = tf.function(step, jit_compile=mode == "xla")
        shape = [batch, _INPUTS, _INPUT_DIM, _OUTPUTS, _OUTPUT_DIM]
        return lambda: [g.numpy() for g in step()], shape
    model = models.capsnet((28, 28, 1), 10)
    model.compile(
        optimizer="adam",
        run_eagerly=mode == "eager",
        jit_compile=mode == "xla",
    )
    images = rng.uniform(size=(batch, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    keras.utils.set_random_seed(0)
    return lambda: model.train_on_batch(images, labels), [batch, 28, 28, 1]


def run_case(case):
    target, mode = case.split(":")
    batch = _BATCH_SIZE.value
    step, shape = _step_function(target, mode, batch)
    timing = measure.time_step(step, batch, _REPEATS.value)
    return {
        "name": f"dynamic_routing_{target}_forward_backward",
        "mode": mode,
        "shape": shape,
        **timing,
    }


def main(argv):
    measure.run_cases(
        argv,
        "bench.dynamic_routing",
        _CASE.value,
        run_case,
        _CASES,
        [f"--repeats={_REPEATS.value}", f"--batch_size={_BATCH_SIZE.value}"],
    )


if __name__ == "__main__":
    app.run(main)
