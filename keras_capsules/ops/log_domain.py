"""`1 - exp(x)` and its log accurate near 0, and the log-weight of a
masked input: log-domain pieces in `keras.ops` that every export format
takes (ONNX and LiteRT's builtins have no `expm1` or `log1p`)."""

import numpy as np
from keras import ops

from keras_capsules.ops import dtype_keeping

# Below this |x|, 1 - exp(x) comes from its Taylor series; above it, from
# exp: its rounding then costs a relative 1e-16 / 0.1 (float64), 6e-7
# (float32).
_SERIES_BELOW = 0.1
# Terms of the series: the first omitted is |x|^10 / 11! of the result,
# below 3e-18 at |x| = 0.1.
_SERIES_TERMS = 10


def one_minus_exp(x):
    """`1 - exp(x)` for `x <= 0`, to the dtype's relative precision.

    ```none
    1 - exp(x) = -x (1 + x/2 (1 + x/3 (1 + ... (1 + x/10))))  |x| < 0.1
    1 - exp(x)                                               otherwise
    ```

    Examples:

        >>> float(one_minus_exp(np.array(-1e-12)))  # 1e-12 - 1e-24 / 2
        9.999999999995e-13
    """
    x = ops.convert_to_tensor(x)
    near = x > -_SERIES_BELOW
    small = ops.where(near, x, 0.0)  # The series sees only small x.
    series = ops.ones_like(x)
    for k in range(_SERIES_TERMS, 1, -1):  # Horner's rule.
        series = 1.0 + small / k * series
    return ops.where(near, -small * series, 1.0 - ops.exp(x))


def log_one_minus_exp(x, tiny):
    """`log(1 - exp(x))` for `x <= 0`; `1 - exp(x)` is held above `tiny`
    (a dtype's smallest normal number), so an `x` that rounds to 0 gives
    a large finite result."""
    return ops.log(dtype_keeping.maximum(one_minus_exp(x), tiny))


def masked_log(dtype_name):
    """A log-weight for a masked input: `exp` takes it to 0, and sums of a
    few such terms stay finite (a quarter of the dtype's lowest number)."""
    return float(np.finfo(dtype_name).min) / 4
