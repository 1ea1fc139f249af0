"""How much of the cores one XLA program uses: the same work as one XLA
program and as several programs side by side.

TensorFlow's XLA:CPU runs a program's operations one after another;
only products and some elementwise loops split their work over the
intra-op threads. TensorFlow's executor runs independent programs (and
the operations of a `tf.function`) side by side. Cases, each in a
process of its own:

```none
products:one_chain      6 dependent batched matrix-vector products over
                        a (16, 16, 16, 72, 16) tensor, like the EM
                        routing's means and distances: one XLA program
products:two_chains     two such chains over two tensors, independent,
                        in one XLA program
products:two_programs   the same two chains, each an XLA program of its
                        own, called from one `tf.function`
em_conv:N               the convolutional EM step of `bench.routing`
                        (K=3, 8 -> 16 types, 6x6, batch 32, forward and
                        backward) with the batch cut into N parts, each
                        an XLA program (`measure.forward_backward_step_
                        in_parts`); N = 1 is `bench.routing`'s XLA step
small_model_train:N     the small matrix-capsule model's training step
                        (28x28 images, batch 32, spread loss, Adam) as
                        `recipes.BatchPartsModel(model, parts=N)`: N = 1
                        is Keras's XLA step (`bench.em_routing
                        --case=small_model:train`); N > 1 takes the
                        gradient of each of N slices of the batch in an
                        XLA program of its own
small_model_predict:N   the same model's `predict_on_batch` (batch 32) in
                        N slices, each an XLA program of its own
classifier_train_R:N    `models.capsule_classifier` with routing R (28x28
                        images, 10 classes, the defaults of
                        `examples.train`: its loss, Adam, batch 32) as
                        `recipes.BatchPartsModel(model, parts=N)`
```

Every line carries `bench.measure.time_step`'s fields; the first is the
machine's (`bench.machine.limits`). Measures; never asserts.

Usage: python -m bench.xla_programs [--repeats=5] [--cases=...]
"""

import json

import numpy as np
import tensorflow as tf
from absl import app, flags

from bench import machine, measure
from keras_capsules import layers, losses, models, recipes

CASES = [
    "products:one_chain",
    "products:two_chains",
    "products:two_programs",
    "em_conv:1",
    "em_conv:2",
    "em_conv:4",
    "small_model_train:1",
    "small_model_train:2",
    "small_model_train:4",
    "small_model_predict:1",
    "small_model_predict:2",
    "small_model_predict:4",
    *[
        f"classifier_train_{routing}:{parts}"
        for routing in ("dynamic", "em", "heinsen", "regression")
        for parts in (1, 2)
    ],
]


def define_flags():
    """Defines the script's flags. Called only when it runs as a program,
    so that tests can import it beside the other benchmarks (which define
    flags of the same names)."""
    flags.DEFINE_integer("repeats", 5, "Timed repetitions; best kept.")
    flags.DEFINE_list("cases", CASES, "Cases to run.")
    flags.DEFINE_string(
        "case", None, "Run one case in this process (one of --cases)."
    )


_CHAIN_SHAPE = (16, 16, 16, 72, 16)
_CHAIN_LENGTH = 6


def product_chain(votes, weights):
    """`_CHAIN_LENGTH` dependent products over `votes` `(..., I, h)`,
    alternating a weighted sum over the `I` rows (`weights` `(..., 1, I)`
    in, `(..., 1, h)` out) and a product with each row (back to `(..., 1,
    I)`); returns the sum of the last."""
    for index in range(_CHAIN_LENGTH):
        if index % 2 == 0:
            weights = tf.matmul(weights, votes)
        else:
            weights = tf.linalg.matrix_transpose(
                tf.matmul(votes, weights, transpose_b=True)
            )
    return tf.reduce_sum(weights)


def _products_step(variant):
    rng = np.random.default_rng(0)
    votes = [
        tf.constant(rng.normal(size=_CHAIN_SHAPE) / 16, tf.float32)
        for _ in range(2)
    ]
    weights = [
        tf.constant(rng.uniform(size=(*_CHAIN_SHAPE[:-2], 1, 72)), tf.float32)
        for _ in range(2)
    ]
    compiled_chain = tf.function(product_chain, jit_compile=True)
    if variant == "one_chain":
        step = tf.function(
            lambda: product_chain(votes[0], weights[0]), jit_compile=True
        )
    elif variant == "two_chains":
        step = tf.function(
            lambda: (
                product_chain(votes[0], weights[0])
                + product_chain(votes[1], weights[1])
            ),
            jit_compile=True,
        )
    elif variant == "two_programs":
        step = tf.function(
            lambda: (
                compiled_chain(votes[0], weights[0])
                + compiled_chain(votes[1], weights[1])
            )
        )
    else:
        raise ValueError(f"Unknown products case {variant!r}.")
    return lambda: step().numpy(), _CHAIN_SHAPE[0]


def _em_conv_step(parts):
    batch = 32
    rng = np.random.default_rng(0)
    inputs = [
        tf.constant(rng.normal(size=(batch, 6, 6, 8)), tf.float32),
        tf.constant(rng.normal(size=(batch, 6, 6, 8, 4, 4)), tf.float32),
    ]
    layer = layers.ConvMatrixCapsules(16, 3, 1)
    if parts == 1:
        return measure.forward_backward_step(layer, inputs, "xla"), batch
    return (
        measure.forward_backward_step_in_parts(layer, inputs, parts),
        batch,
    )


def _batch_parts_step(model, loss, parts, train):
    """`model` as `recipes.BatchPartsModel` in `parts`, compiled with
    `loss`, Adam and XLA: its `train_on_batch` (or `predict_on_batch`)
    on a batch of 32 28x28 images."""
    batch = 32
    rng = np.random.default_rng(0)
    images = tf.constant(rng.uniform(size=(batch, 28, 28, 1)), tf.float32)
    labels = tf.constant(np.arange(batch) % 10)
    model = recipes.BatchPartsModel(model, parts=parts)
    model.compile(optimizer="adam", loss=loss, jit_compile=True)
    if train:
        return lambda: model.train_on_batch(images, labels), batch
    return lambda: model.predict_on_batch(images), batch


def run_case(case):
    kind, variant = case.split(":")
    if kind == "products":
        step, batch = _products_step(variant)
    elif kind == "em_conv":
        step, batch = _em_conv_step(int(variant))
    elif kind.startswith("classifier_train_"):
        routing = kind.removeprefix("classifier_train_")
        step, batch = _batch_parts_step(
            models.capsule_classifier((28, 28, 1), 10, routing=routing),
            models.classifier_loss(routing),
            int(variant),
            train=True,
        )
    else:
        step, batch = _batch_parts_step(
            models.small_matrix_capsnet(input_shape=(28, 28, 1)),
            losses.SpreadLoss(),
            int(variant),
            train=kind.endswith("train"),
        )
    return {
        "name": f"xla_programs_{kind}",
        "case": case,
        **measure.time_step(step, batch, flags.FLAGS.repeats),
    }


def main(argv):
    options = flags.FLAGS
    for case in options.cases:
        if case not in CASES:
            raise app.UsageError(
                f"Unknown case {case!r} in --cases. Expected cases from "
                f"{CASES}."
            )
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not options.case:
        print(json.dumps({"name": "machine", **machine.limits()}), flush=True)
    measure.run_cases(
        argv,
        "bench.xla_programs",
        options.case,
        run_case,
        options.cases,
        [f"--repeats={options.repeats}"],
    )


if __name__ == "__main__":
    define_flags()
    app.run(main)
