"""Batched products of small matrices, at the running backend's lowest
per-call cost."""

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.fast_paths import fast_path


def small_matmul(a, b):
    """`a @ b` over equal leading batch axes, for products of a few
    kilobytes (Heinsen routing's matrix-vector products at 64 -> 5).

    `ops.matmul`, or the backend's form of lower per-call cost where it
    has one (TensorFlow: `backend/tensorflow/small_matmul.py`).

    Args:
        a: `(..., n, k)`.
        b: `(..., k, m)`, the same batch axes as `a`.

    Returns:
        `(..., n, m)`.
    """
    product = fast_path("small_matmul")
    return dtype_keeping.matmul(a, b) if product is None else product(a, b)
