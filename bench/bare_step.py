"""How much of a routing layer's training step is Keras's, on TensorFlow
and on JAX: the step of `bench.backends` (`train_on_batch`, compiled by
XLA) beside a bare step of the same model, loss and plain SGD, written in
the backend itself (`tf.function(jit_compile=True)` with a gradient tape
on TensorFlow; `jax.jit` of `model.stateless_call`'s gradient, buffers
donated, on JAX), timed alike in one process. What remains between the
backends' bare steps is their XLA builds' own. Measures; never asserts.

Usage: KERAS_BACKEND=jax python -m bench.bare_step [--shapes=...]
    [--repeats=3] [--neutral]
"""

import contextlib
import json

import keras
import numpy as np
from absl import app, flags

from bench.backends import (
    best_seconds_per_step,
    device_name,
    onednn_setting,
)
from bench.routing_shapes import SHAPES

# `--shapes`, `--repeats` and `--neutral` are `bench.backends`' flags
# (defined there).
FLAGS = flags.FLAGS
_LEARNING_RATE = 1e-3


def _model_and_inputs(shape):
    rng = np.random.default_rng(0)
    inputs = [x.astype("float32") for x in shape["inputs"](rng)]
    symbolic = [keras.Input(x.shape[1:]) for x in inputs]
    return keras.Model(symbolic, shape["layer"]()(symbolic)), inputs


def _loss(outputs):
    """`bench.backends`' loss: the mean square of the outputs."""
    return sum(keras.ops.mean(keras.ops.square(y)) for y in outputs)


def keras_step(model, inputs):
    """`train_on_batch` as `bench.backends` runs it; returns a step."""
    model.compile(
        optimizer=keras.optimizers.SGD(_LEARNING_RATE),
        loss=lambda y_true, y_pred: keras.ops.mean(keras.ops.square(y_pred)),
        jit_compile=True,
    )
    targets = [np.zeros(y.shape, "float32") for y in model(inputs)]
    return lambda: model.train_on_batch(inputs, targets)


def bare_step(model, inputs):
    """The same loss and SGD step, compiled by the backend alone."""
    if keras.backend.backend() == "jax":
        return _jax_step(model, inputs)
    return _tensorflow_step(model, inputs)


def _jax_step(model, inputs):
    import jax  # noqa: PLC0415

    def loss(trainable, non_trainable, inputs):
        outputs, _ = model.stateless_call(trainable, non_trainable, inputs)
        return _loss(keras.tree.flatten(outputs))

    def step(trainable, non_trainable, inputs):
        gradients = jax.grad(loss)(trainable, non_trainable, inputs)
        return [w - _LEARNING_RATE * g for w, g in zip(trainable, gradients)]

    step = jax.jit(step, donate_argnums=0)
    state = {"trainable": [v.value for v in model.trainable_variables]}
    non_trainable = [v.value for v in model.non_trainable_variables]

    def run():
        state["trainable"] = step(state["trainable"], non_trainable, inputs)
        jax.block_until_ready(state["trainable"])

    return run


def _tensorflow_step(model, inputs):
    import tensorflow as tf  # noqa: PLC0415

    @tf.function(jit_compile=True)
    def step(inputs):
        with tf.GradientTape() as tape:
            value = _loss(keras.tree.flatten(model(inputs)))
        gradients = tape.gradient(value, model.trainable_variables)
        for variable, gradient in zip(model.trainable_variables, gradients):
            variable.assign_sub(_LEARNING_RATE * gradient)
        return value

    return lambda: step(inputs).numpy()


def _forms():
    """The ops' neutral forms under `--neutral` (what JAX computes), else
    the backend's own."""
    if not FLAGS.neutral:
        return contextlib.nullcontext()
    from keras_capsules.ops import fast_paths  # noqa: PLC0415

    return fast_paths.neutral_forms()


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    backend = keras.backend.backend()
    if backend not in ("tensorflow", "jax"):
        raise app.UsageError(
            "`bench.bare_step` writes bare steps for TensorFlow and JAX. "
            f"Received KERAS_BACKEND={backend!r}: run it with tensorflow "
            "or jax."
        )
    for name in FLAGS.shapes or list(SHAPES):
        shape = SHAPES[name]
        timings = {}
        with _forms():
            for kind, make in (("keras", keras_step), ("bare", bare_step)):
                keras.utils.set_random_seed(0)
                model, inputs = _model_and_inputs(shape)
                run = make(model, inputs)
                run()  # traces and compiles
                timings[kind] = best_seconds_per_step(run)
        print(
            json.dumps(
                {
                    "name": f"bare_step_{name}",
                    "backend": backend,
                    "keras": keras.__version__,
                    "keras_examples_per_second": round(
                        shape["batch"] / timings["keras"], 1
                    ),
                    "bare_examples_per_second": round(
                        shape["batch"] / timings["bare"], 1
                    ),
                    "keras_over_bare": round(
                        timings["keras"] / timings["bare"], 3
                    ),
                    "forms": "neutral" if FLAGS.neutral else "default",
                    "device": device_name(backend),
                    **onednn_setting(backend),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    app.run(main)
