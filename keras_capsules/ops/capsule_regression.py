"""Exact inference in capsule regression (Saul, sections 2.2 and A.2).

```none
paper                   code               shape
W_i x = E[h_i | x]      means              (..., m, d)
|W_j x|^2               squared_lengths    (..., m)
beta                    beta               (...), eq. 12 with sigma^2 = 1
lambda_0, lambda_1      I_(dm/2), I_(dm/2+1) of interpolating_coefficient
P(y = j | x)            probabilities      (..., m), eq. 16
Q_i(y = j | x)          (inline)           eq. 18
E[h_i | x, y]           posterior means    (..., m, d), eq. 19
```

sigma^2 = 1 throughout: the likelihood is invariant to W -> W / sigma,
sigma^2 -> 1 (eqs. 20-21).
"""

import math

import keras
from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.interpolating_coefficient import (
    interpolating_coefficient,
    interpolating_coefficients,
)


def capsule_regression_probabilities(means):
    """Returns P(y = j | x) of Saul eq. 16 from the prior means W_j x.

    ```none
    P(y = j | x) = lambda_0 |W_j x|^2 / sum_i |W_i x|^2 + (1 - lambda_0) / m
    ```

    Args:
        means: `(..., m, d)` float tensor, the capsules' prior means `W_i x`.

    Returns:
        `(..., m)` probabilities summing to 1 over the last axis. A zero input
        gives the uniform distribution.

    Examples:

        >>> means = np.zeros((1, 3, 2))  # no evidence: every class alike
        >>> np.round(ops.convert_to_numpy(
        ...     capsule_regression_probabilities(means)), 4)
        array([[0.3333, 0.3333, 0.3333]])
    """
    means = _as_float(means)
    m, d = _capsule_counts(means)
    squared_lengths, total = _squared_lengths(means)
    coefficient = interpolating_coefficient(0.5 * total, d * m / 2.0)
    return _mixture(
        coefficient[..., None], _shares(squared_lengths, total), 1.0 / m
    )


def capsule_regression_posterior_means(means, labels):
    """Returns E[h_i | x, y] of Saul eqs. 18-19, for every capsule i.

    ```none
    Q_i(y = j | x) = lambda_1 |W_j x|^2 / sum_k |W_k x|^2
                     + (1 - lambda_1) (2 delta_ij + d) / (2 + dm)
    E[h_i | x, y = j] = Q_i(y = j | x) / P(y = j | x) * W_i x
    ```

    Args:
        means: `(..., m, d)` float tensor, the prior means `W_i x`.
        labels: `(...)` integer tensor of classes in `[0, m)`.

    Returns:
        `(..., m, d)`: the posterior mean of every capsule given the label.

    Examples:

        >>> means = np.ones((1, 3, 2))
        >>> tuple(capsule_regression_posterior_means(means,
        ...       np.array([1])).shape)
        (1, 3, 2)
    """
    means = _as_float(means)
    return posterior_scales(means, labels)[..., None] * means


def posterior_scales(means, labels):
    """Returns Q_i(y | x) / P(y | x), `(..., m)`: the factor of eq. 19.

    Arguments as in `capsule_regression_posterior_means`.
    """
    means = _as_float(means)
    m, d = _capsule_counts(means)
    squared_lengths, total = _squared_lengths(means)
    lambda_0, lambda_1 = interpolating_coefficients(0.5 * total, d * m / 2.0)
    one_hot = ops.one_hot(ops.cast(labels, "int32"), m, dtype=means.dtype)
    label_share = ops.sum(_shares(squared_lengths, total) * one_hot, axis=-1)
    probability = _mixture(lambda_0, label_share, 1.0 / m)
    # Q_i(y | x): the label's share, plus (2 + d) / (2 + dm) for i = y and
    # d / (2 + dm) otherwise.
    uniform = (2.0 * one_hot + d) / (2.0 + d * m)
    q = _mixture(lambda_1[..., None], label_share[..., None], uniform)
    tiny = ops.cast(_smallest_normal(means.dtype), means.dtype)
    return q / dtype_keeping.maximum(probability, tiny)[..., None]


def _mixture(coefficient, certain, uncertain):
    """coefficient * certain + (1 - coefficient) * uncertain (eqs. 16, 18)."""
    return coefficient * certain + (1.0 - coefficient) * uncertain


def _squared_lengths(means):
    squared_lengths = ops.sum(ops.square(means), axis=-1)  # (..., m)
    return squared_lengths, ops.sum(squared_lengths, axis=-1)


def _shares(squared_lengths, total):
    """|W_j x|^2 / sum_i |W_i x|^2, and 0 where every capsule is zero.

    A total below the square root of the smallest normal number counts as
    zero: the shares' gradient divides by its square, which underflows
    (an infinite gradient where a backend keeps subnormal numbers, as
    PyTorch does), and the shares' weight in eqs. 16 and 18, lambda ~
    total / (dm), is below 1e-19 there anyway.
    """
    floor = math.sqrt(_smallest_normal(total.dtype))
    positive = total > ops.cast(floor, total.dtype)
    safe_total = ops.where(positive, total, 1.0)
    return ops.where(
        positive[..., None], squared_lengths / safe_total[..., None], 0.0
    )


def _capsule_counts(means):
    shape = means.shape
    if len(shape) < 2 or shape[-1] is None or shape[-2] is None:
        raise ValueError(
            "Capsule regression expects prior means of shape (..., m, d) with "
            f"known m and d. Received shape: {tuple(shape)}."
        )
    return int(shape[-2]), int(shape[-1])


def _as_float(x):
    x = ops.convert_to_tensor(x)
    if not keras.backend.is_float_dtype(x.dtype):
        x = ops.cast(x, keras.config.floatx())
    return x


def _smallest_normal(dtype):
    return {
        "float16": 6.1e-5,
        "bfloat16": 1.2e-38,
        "float32": 1.2e-38,
        "float64": 2.3e-308,
    }[keras.backend.standardize_dtype(dtype)]
