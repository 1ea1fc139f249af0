"""`keras.ops` products and bounds that keep their inputs' dtype on every
backend.

Keras's promotion rules map a 64-bit result type to 32 bits outside
TensorFlow, as JAX does by default. JAX with 64-bit types enabled keeps
float64 all the same, but Keras's PyTorch backend casts float64 operands
of `ops.matmul`, `ops.maximum` and `ops.minimum` to float32 before it
computes: a float64 op would lose float64's precision there, or fail
where a float32 product meets a float64 tensor. The ops call these
instead; each is the `keras.ops` function of its name, or the backend's
form that keeps the dtype where Keras's does not
(`backend/torch/dtype_keeping.py`).
"""

from keras import ops

from keras_capsules.ops.fast_paths import fast_path


def matmul(a, b):
    """`ops.matmul(a, b)` in the dtype of `a` and `b` (equal floats)."""
    product = fast_path("matmul")
    return ops.matmul(a, b) if product is None else product(a, b)


def maximum(x, y):
    """`ops.maximum(x, y)`; `x` a float tensor, `y` a tensor of its dtype
    or a Python number: the result has `x`'s dtype."""
    bound = fast_path("maximum")
    return ops.maximum(x, y) if bound is None else bound(x, y)


def minimum(x, y):
    """`ops.minimum(x, y)`; `x` a float tensor, `y` a tensor of its dtype
    or a Python number: the result has `x`'s dtype."""
    bound = fast_path("minimum")
    return ops.minimum(x, y) if bound is None else bound(x, y)
