"""Checks of the values that enter a loss, a layer or a trainer: class
labels, and data an op needs within a range.

A bad label raises a ValueError in eager mode and an InvalidArgumentError
(with the same message) in a graph. Under XLA (`jit_compile=True`) the
checks are left out: XLA cannot run assertions.
"""

import numpy as np
import tensorflow as tf

from keras_capsules.private_apis import compiling_with_xla


def class_ids(owner, labels, num_classes):
    """`labels`, class ids `(...)` (or `(batch, 1)`), as int32 `(...)`
    once they are whole numbers (of an integer or float dtype) in
    `[0, num_classes)`."""
    labels = tf.convert_to_tensor(labels)
    if labels.shape.rank == 2 and labels.shape[-1] == 1:
        labels = labels[:, 0]
    if not (labels.dtype.is_integer or labels.dtype.is_floating):
        raise ValueError(
            f"`{owner}` expects numeric class ids. Received dtype "
            f"{labels.dtype.name}."
        )
    whole, in_range = valid_class_ids(labels, num_classes)
    return checked(
        owner,
        tf.cast(labels, "int32"),
        labels,
        [
            (tf.reduce_all(whole), "whole-number class ids"),
            (tf.reduce_all(in_range), f"class ids in [0, {num_classes})"),
        ],
    )


def valid_class_ids(labels, num_classes):
    """Elementwise `(whole, in_range)`: whether each label is a whole
    number, and whether it lies in `[0, num_classes)`."""
    ids = tf.cast(labels, "float64")
    return ids == tf.round(ids), (ids >= 0.0) & (ids < num_classes)


def checked(owner, value, received, conditions, what="labels"):
    """`value`, once every `(condition, expectation)` holds: checked now
    in eager mode, by assertions in a graph; the message names `owner`,
    the expectation and what was received (`what`, the tensor
    `received`)."""
    if tf.executing_eagerly():
        for condition, expectation in conditions:
            if not bool(condition):
                raise ValueError(
                    f"`{owner}` expects {expectation}. Received {what} "
                    f"{_preview(received)}."
                )
        return value
    if compiling_with_xla():  # XLA drops assertions (with a warning).
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


def _preview(labels):
    values = np.asarray(labels).reshape(-1)
    text = np.array2string(values[:8], separator=", ")
    return f"{text[:-1]}, ...]" if values.size > 8 else text
