"""TensorFlow's checks of values (`ops.labels.checked`): raised now in
eager mode, asserted in a graph, left out under XLA."""

import tensorflow as tf

from keras_capsules.backend.tensorflow.compilation import compiled_by_xla
from keras_capsules.ops.labels import preview


def checked(owner, value, received, conditions, what="labels"):
    """`ops.labels.checked` on TensorFlow: a ValueError in eager mode; in
    a graph, assertions that raise an InvalidArgumentError with the same
    message; under XLA, which drops assertions (with a warning), no
    check."""
    if tf.executing_eagerly():
        for condition, expectation in conditions:
            if not bool(condition):
                raise ValueError(
                    f"`{owner}` expects {expectation}. Received {what} "
                    f"{preview(received)}."
                )
        return value
    if compiled_by_xla():
        return value
    assertions = [
        tf.debugging.Assert(
            condition,
            [f"`{owner}` expects {expectation}. Received {what}:", received],
        )
        for condition, expectation in conditions
    ]
    with tf.control_dependencies(assertions):
        return tf.identity(value)
