"""Argument checks shared by the ops, layers and trainers."""

import numbers

import keras
from keras import ops


def is_integer(value):
    """True for Python and NumPy integers, False for bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def positive_int(owner, name, value):
    """`value` as a Python int if it is an integer >= 1 (Python or NumPy);
    else a ValueError that names `owner`'s argument `name`."""
    if not is_integer(value) or value < 1:
        raise ValueError(
            f"`{owner}` expects `{name}` to be a positive integer. "
            f"Received: {name}={value!r}."
        )
    return int(value)


def positive_number(owner, name, value):
    """Raises a ValueError that names `owner`'s argument `name` unless
    `value` is a real number > 0 (not a bool)."""
    if isinstance(value, bool) or not (
        isinstance(value, numbers.Real) and value > 0
    ):
        raise ValueError(
            f"`{owner}` expects `{name}` to be a number > 0. Received: "
            f"{value!r}."
        )


def check_num_iterations(op_name, num_iterations):
    """Raises a ValueError unless `num_iterations` is an integer >= 1."""
    if not is_integer(num_iterations) or num_iterations < 1:
        raise ValueError(
            f"`{op_name}` expects `num_iterations` to be an int >= 1. "
            f"Received: {num_iterations!r}."
        )


def check_targets_like(op_name, targets, scores, scores_name):
    """Raises a ValueError unless `targets` has the shape of `scores`
    (no broadcasting: ids `(batch,)` against `(batch, n)` scores would
    broadcast when batch == n)."""
    shape, expected = tuple(targets.shape), tuple(scores.shape)
    if not _matches(shape, expected):
        raise ValueError(
            f"`{op_name}` expects `targets` of the shape of `{scores_name}`, "
            f"{expected} (one-hot or multi-hot; turn class ids into targets "
            f"with `keras.ops.one_hot`). Received targets of shape {shape}."
        )


def routing_tensor(op_name, name, value):
    """`(tensor, output_dtype)`: `value` as the tensor a routing op
    computes with, and the dtype its results return in.

    Integer and bool tensors compute and return in `keras.config.floatx()`;
    float16 and bfloat16 compute in float32 (their range and precision
    underflow the routing's small terms) and return in their dtype. A
    capsule axis of size 0 is refused: there is nothing to route.
    """
    tensor = ops.convert_to_tensor(value)
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    if not keras.backend.is_float_dtype(dtype):
        dtype = keras.config.floatx()
        tensor = ops.cast(tensor, dtype)
    tensor = at_least_float32(tensor)
    if 0 in tuple(tensor.shape)[1:]:
        raise ValueError(
            f"`{op_name}` expects `{name}` with at least one capsule on "
            f"every axis but the batch. Received shape "
            f"{tuple(tensor.shape)}."
        )
    return tensor, dtype


def check_rank(op_name, name, tensor, layout):
    """Raises a ValueError unless `tensor` has one axis per name of
    `layout`, e.g. `"(batch, n_in, n_out, h)"`."""
    if len(tensor.shape) != layout.count(",") + 1:
        raise ValueError(
            f"`{op_name}` expects {name} of shape {layout}. Received shape "
            f"{tuple(tensor.shape)}."
        )


def check_shape(op_name, name, value, *expected):
    """Raises a ValueError unless `value`'s static shape matches one of
    the `expected` shapes (tuples; None matches any size); returns `value`
    as a tensor."""
    tensor = ops.convert_to_tensor(value)
    shape = tuple(tensor.shape)
    if any(_matches(shape, tuple(candidate)) for candidate in expected):
        return tensor
    readable = " or ".join(str(tuple(candidate)) for candidate in expected)
    raise ValueError(
        f"`{op_name}` expects `{name}` of shape {readable} (None: any "
        f"size), to match the votes. Received shape {shape}."
    )


def check_broadcastable(op_name, name, value, target):
    """Raises a ValueError unless `value` broadcasts to the static shape
    `target` (None: any size); returns it as a tensor."""
    tensor = ops.convert_to_tensor(value)
    shape = tuple(tensor.shape)
    trailing = tuple(target)[len(target) - len(shape) :] if shape else ()
    if len(shape) > len(target) or not all(
        a is None or b is None or a in (1, b) for a, b in zip(shape, trailing)
    ):
        raise ValueError(
            f"`{op_name}` expects `{name}` that broadcasts to {tuple(target)} "
            f"(None: any size), to match the votes. Received shape {shape}."
        )
    return tensor


def at_least_float32(tensor):
    """`tensor` in float32 if it is float16 or bfloat16 (as is otherwise):
    their range and precision underflow the ops' small terms."""
    if keras.backend.standardize_dtype(tensor.dtype) in ("float16", "bfloat16"):
        return ops.cast(tensor, "float32")
    return tensor


def _matches(shape, expected):
    """Whether two static shapes agree (None matches any size)."""
    return len(shape) == len(expected) and all(
        a is None or b is None or a == b for a, b in zip(shape, expected)
    )
