"""Batched products of small matrices at TensorFlow's lowest per-call
cost."""

import tensorflow as tf  # the kernel choice and the custom gradient
from keras import ops

from keras_capsules.backend.tensorflow.compilation import compiled_by_xla


def small_matmul(a, b):
    """`a @ b` over equal leading batch axes, for products of a few
    kilobytes (Heinsen routing's matrix-vector products at 64 -> 5).

    TensorFlow hands its batched product (`BatchMatMulV2`, what
    `ops.matmul` makes) to oneDNN, whose call costs about 25 us more than
    the product itself at these sizes; it leaves `BatchMatMulV3` to
    Eigen. Both directions of the gradient are `BatchMatMulV3` too. Under
    XLA, which compiles either the same way, and in dtypes other than
    float32 and float64 (TensorFlow's CPU kernel of `BatchMatMulV3` has
    no float16), the plain product.

    Args:
        a: `(..., n, k)`.
        b: `(..., k, m)`, the same batch axes as `a`.

    Returns:
        `(..., n, m)`.
    """
    a, b = ops.convert_to_tensor(a), ops.convert_to_tensor(b)
    if compiled_by_xla() or a.dtype not in (tf.float32, tf.float64):
        return ops.matmul(a, b)
    return _eigen_matmul(a, b)


def _product(a, b, adj_x=False, adj_y=False):
    return tf.raw_ops.BatchMatMulV3(
        x=a, y=b, Tout=a.dtype, adj_x=adj_x, adj_y=adj_y
    )


@tf.custom_gradient
def _eigen_matmul(a, b):
    def gradient(upstream):
        return (
            _product(upstream, b, adj_y=True),
            _product(a, upstream, adj_x=True),
        )

    return _product(a, b), gradient
