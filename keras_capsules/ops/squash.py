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
