"""Vector lengths and the squashing nonlinearity (Sabour et al. 2017, eq. 1)."""

from keras import ops

# Inside the square root of a norm: keeps its gradient finite at 0 and is
# far below the squared length of any capsule that carries information.
_NORM_EPSILON = 1e-12


def safe_norm(x, axis=-1, keepdims=False, epsilon=_NORM_EPSILON):
    """Returns `sqrt(sum(x**2, axis) + epsilon)`, with finite gradients at 0.

    Args:
        x: float tensor.
        axis: int, the axis summed over.
        keepdims: bool, whether to keep `axis` with size 1.
        epsilon: float added under the square root.
    """
    x = ops.convert_to_tensor(x)
    return ops.sqrt(
        ops.sum(ops.square(x), axis=axis, keepdims=keepdims)
        + ops.cast(epsilon, x.dtype)
    )


def squash(vectors, axis=-1):
    """Shrinks vectors to length < 1, keeping direction (Sabour eq. 1).

    ```none
    v = |s|^2 / (1 + |s|^2) * s / |s|
    ```

    Written as `s * |s| / (1 + |s|^2)` with `safe_norm`, so a zero vector maps
    to zero with finite gradients.

    Args:
        vectors: float tensor of capsules.
        axis: int, the capsule dimension.

    Returns:
        A tensor shaped like `vectors`.
    """
    vectors = ops.convert_to_tensor(vectors)
    squared = ops.sum(ops.square(vectors), axis=axis, keepdims=True)
    norm = safe_norm(vectors, axis=axis, keepdims=True)
    return vectors * (norm / (1.0 + squared))


# The largest float32 below 1: a squashed length that rounds to 1 keeps a
# finite logit (about 16.6).
_LARGEST_LENGTH = 1.0 - 2.0**-24


def squashed_length_logit(capsules, axis=-1):
    """The logit of a squashed capsule's length: `2 log |s|`.

    ```none
    |v| = |s|^2 / (1 + |s|^2) = logistic(2 log |s|)        (Sabour eq. 1)
    2 log |s| = log |v| - log(1 - |v|)
    ```

    so that a vector capsule's activation `|v|` is the logistic of a
    logit, as in the other routing families. Computed from `v`: the length
    is `safe_norm(v)` (a zero capsule gives about -13.8) and is held below
    1 (a length that rounds to 1 gives about 16.6).

    Args:
        capsules: float tensor of squashed capsules `v`, lengths < 1.
        axis: int or tuple of ints, the capsule's axes.

    Returns:
        The logits, `capsules` without `axis`.
    """
    capsules = ops.convert_to_tensor(capsules)
    length = ops.minimum(
        safe_norm(capsules, axis=axis),
        ops.cast(_LARGEST_LENGTH, capsules.dtype),
    )
    return ops.log(length) - ops.log1p(-length)
