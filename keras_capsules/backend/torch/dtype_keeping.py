"""`matmul`, `maximum` and `minimum` in their operands' dtype.

Keras's PyTorch backend computes these three in float32 when their
operands are float64 (its promotion rules map 64-bit types to 32 bits);
PyTorch's own functions keep float64. Tested equal to `keras.ops` (in
float32, where both compute alike) and to NumPy in float64
(`tests/ops/test_dtype_keeping.py`, run on PyTorch by `make test-torch`).
"""

import torch
from keras import ops


def matmul(a, b):
    """`a @ b`, in the dtype of `a` and `b`."""
    return torch.matmul(ops.convert_to_tensor(a), ops.convert_to_tensor(b))


def _other(x, y):
    """`y` as a tensor of `x`'s dtype and device (a Python number without
    a detour through float32, Keras's default float type)."""
    if not isinstance(y, (int, float)):
        y = ops.convert_to_tensor(y)
    return torch.as_tensor(y, dtype=x.dtype, device=x.device)


def maximum(x, y):
    """The elementwise larger of `x` and `y`, in `x`'s dtype."""
    x = ops.convert_to_tensor(x)
    return torch.maximum(x, _other(x, y))


def minimum(x, y):
    """The elementwise smaller of `x` and `y`, in `x`'s dtype."""
    x = ops.convert_to_tensor(x)
    return torch.minimum(x, _other(x, y))
