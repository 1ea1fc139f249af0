"""PyTorch's forms of the ops, by the names the ops ask
`keras_capsules.ops.fast_paths` for."""

from keras_capsules.backend.torch.dtype_keeping import (
    matmul,
    maximum,
    minimum,
)

__all__ = ["matmul", "maximum", "minimum"]
