"""Checks of the values that enter a loss, a layer or a trainer: class
labels, and data an op needs within a range.

A bad value raises a ValueError where the values are at hand (eager
execution, PyTorch). In a TensorFlow graph the check is an assertion that
raises an InvalidArgumentError with the same message
(`backend/tensorflow/checks.py`). In a function compiled by XLA or traced
by JAX the checks are left out: neither can stop on a value.
"""

import keras
import numpy as np
from keras import ops

from keras_capsules.ops.fast_paths import fast_path


def class_ids(owner, labels, num_classes):
    """`labels`, class ids `(...)` (or `(batch, 1)`), as int32 `(...)`
    once they are whole numbers (of an integer or float dtype) in
    `[0, num_classes)`."""
    labels = ops.convert_to_tensor(labels)
    if len(labels.shape) == 2 and labels.shape[-1] == 1:
        labels = labels[:, 0]
    dtype = keras.backend.standardize_dtype(labels.dtype)
    if not ("int" in dtype or "float" in dtype):
        raise ValueError(
            f"`{owner}` expects numeric class ids. Received dtype {dtype}."
        )
    whole, in_range = valid_class_ids(labels, num_classes)
    return checked(
        owner,
        ops.cast(labels, "int32"),
        labels,
        [
            (ops.all(whole), "whole-number class ids"),
            (ops.all(in_range), f"class ids in [0, {num_classes})"),
        ],
    )


def valid_class_ids(labels, num_classes):
    """Elementwise `(whole, in_range)`: whether each label is a whole
    number, and whether it lies in `[0, num_classes)`. Compared in the
    labels' own dtype, where rounding a float is exact (no float64, which
    JAX lacks by default)."""
    if "int" in keras.backend.standardize_dtype(labels.dtype):
        whole = ops.ones_like(labels, dtype="bool")
    else:
        whole = labels == ops.round(labels)
    return whole, ops.logical_and(labels >= 0, labels < num_classes)


def checked(owner, value, received, conditions, what="labels"):
    """`value`, once every `(condition, expectation)` holds; the message
    names `owner`, the expectation and what was received (`what`, the
    tensor `received`). Checked now where the conditions have values;
    TensorFlow asserts them in a graph; left out where no value can stop
    the computation (XLA, a JAX trace)."""
    check = fast_path("checked")
    if check is not None:
        return check(owner, value, received, conditions, what)
    for condition, expectation in conditions:
        held = holds(condition)
        if held is False:
            raise ValueError(
                f"`{owner}` expects {expectation}. Received {what} "
                f"{preview(received)}."
            )
    return value


def holds(condition):
    """The boolean value of the scalar `condition`, or None where it has
    no value yet (a tensor being traced)."""
    try:
        return bool(ops.convert_to_numpy(condition))
    except Exception:  # noqa: BLE001 - each backend names its tracer error
        return None


def preview(values):
    """The first 8 of `values`, as text for an error message."""
    values = np.asarray(values).reshape(-1)
    text = np.array2string(values[:8], separator=", ")
    return f"{text[:-1]}, ...]" if values.size > 8 else text
