"""Vector lengths and the squashing nonlinearity (Sabour et al. 2017, eq. 1)."""

from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.arguments import at_least_float32
from keras_capsules.ops.log_domain import one_minus_exp

# Inside the square root of a norm: keeps its gradient finite at 0 and is
# far below the squared length of any capsule that carries information.
_NORM_EPSILON = 1e-12


def safe_norm(x, axis=-1, keepdims=False, epsilon=_NORM_EPSILON):
    """Returns `sqrt(sum(x**2, axis) + epsilon)`, with finite gradients at 0.

    No finite vector overflows: when a square does (float32 squares
    overflow from 1.8e19), the norms are computed again from the vectors
    scaled by their largest magnitude (a conditional branch, so ordinary
    inputs pay only the check). float16 and bfloat16 are computed in
    float32 and returned in their dtype.

    Args:
        x: float tensor.
        axis: int or tuple of ints, the axes summed over.
        keepdims: bool, whether to keep `axis` with size 1.
        epsilon: float added under the square root.

    Examples:

        >>> round(float(safe_norm(np.array([3.0, 4.0]))), 4)
        5.0
        >>> float(safe_norm(np.zeros(3))) > 0  # finite, with a finite gradient
        True
    """
    x = ops.convert_to_tensor(x)
    dtype = x.dtype
    x = at_least_float32(x)
    epsilon = ops.cast(epsilon, x.dtype)
    squared = ops.sum(ops.square(x), axis=axis, keepdims=True)

    def unscaled():
        return ops.sqrt(squared + epsilon)

    def scaled():  # Only when a square overflowed: it costs a reduction.
        scale = dtype_keeping.maximum(
            ops.max(ops.abs(x), axis=axis, keepdims=True), 1.0
        )
        total = ops.sum(ops.square(x / scale), axis=axis, keepdims=True)
        return scale * ops.sqrt(total + epsilon / scale**2)

    norm = ops.cond(ops.all(ops.isfinite(squared)), unscaled, scaled)
    if not keepdims:
        norm = ops.squeeze(norm, axis=axis)
    return ops.cast(norm, dtype)


def squash(vectors, axis=-1):
    """Shrinks vectors to length < 1, keeping direction (Sabour eq. 1).

    ```none
    v = |s|^2 / (1 + |s|^2) * s / |s|  =  s / (|s| + 1 / |s|)
    ```

    The second form, with `safe_norm`, maps a zero vector to zero with
    finite gradients and a vector of any finite length to one of length
    below 1 (nothing is squared but the scaled norm). float16 and bfloat16
    are computed in float32 and returned in their dtype.

    Args:
        vectors: float tensor of capsules.
        axis: int, the capsule dimension.

    Returns:
        A tensor shaped like `vectors`.

    Examples:

        >>> v = squash(np.array([[3.0, 4.0]]))
        >>> np.round(ops.convert_to_numpy(v), 4)  # length 25 / 26
        array([[0.5769, 0.7692]])
    """
    vectors = ops.convert_to_tensor(vectors)
    dtype = vectors.dtype
    vectors = at_least_float32(vectors)
    norm = safe_norm(vectors, axis=axis, keepdims=True)
    return ops.cast(vectors / (norm + 1.0 / norm), dtype)


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

    Examples:

        >>> logit = squashed_length_logit(squash(np.array([[3.0, 4.0]])))
        >>> round(float(ops.sigmoid(logit)[0]), 4)  # the length, 25 / 26
        0.9615
    """
    capsules = ops.convert_to_tensor(capsules)
    length = dtype_keeping.minimum(
        safe_norm(capsules, axis=axis),
        ops.cast(_LARGEST_LENGTH, capsules.dtype),
    )
    # log(1 - |v|) rather than `log1p` (ONNX has no such op): its error,
    # half an ulp of 1, is what the length's own rounding costs the logit.
    return ops.log(length) - ops.log(1.0 - length)


def exponential_squash(vectors, axis=-1):
    """Shrinks vectors to length < 1, keeping direction (Mazzia et al.
    2021, Efficient-CapsNet, eq. 2).

    ```none
    v = (1 - exp(-|s|)) s / |s|
    ```

    The length `1 - exp(-|s|)` grows like `|s|` near 0 (Sabour's squash
    grows like `|s|^2`), so small capsules keep a gradient. Computed as
    `(1 - exp(-|s|)) / |s|` with `safe_norm` (`1 - exp` by
    `log_domain.one_minus_exp`, accurate near 0): a zero vector maps to
    zero with finite gradients. float16 and bfloat16 are computed in
    float32 and returned in their dtype. `squashed_length_logit` gives
    its length's logit, `log(exp(|s|) - 1)`.

    Args:
        vectors: float tensor of capsules.
        axis: int, the capsule dimension.

    Returns:
        A tensor shaped like `vectors`.

    Examples:

        >>> v = exponential_squash(np.array([[3.0, 4.0]]))
        >>> round(float(ops.norm(v)), 4)  # 1 - exp(-5)
        0.9933
    """
    vectors = ops.convert_to_tensor(vectors)
    dtype = vectors.dtype
    vectors = at_least_float32(vectors)
    norm = safe_norm(vectors, axis=axis, keepdims=True)
    return ops.cast(one_minus_exp(-norm) / norm * vectors, dtype)
