"""The digamma function `psi(x) = d log Gamma(x) / dx` for `x > 0`, in
`keras.ops` (which has none)."""

from keras import ops

# psi is shifted up to x + _SHIFT by the recurrence psi(x) = psi(x + 1) -
# 1 / x, where the asymptotic series below errs by less than its first
# omitted term, 691 / (32760 x^12) < 4e-13 at x = 8.
_SHIFT = 8
# Coefficients of x^-2, x^-4, ..., x^-10 in psi(x) ~ log x - 1 / (2x) -
# sum_k B_2k / (2k x^2k) (B_2k the Bernoulli numbers).
_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132)


def digamma(x):
    """Returns `psi(x)`, the derivative of `log Gamma`, for `x > 0`.

    ```none
    psi(x) = psi(x + 8) - sum_{k=0}^{7} 1 / (x + k)
    psi(y) = log y - 1 / (2y) - 1 / (12 y^2) + 1 / (120 y^4)
             - 1 / (252 y^6) + 1 / (240 y^8) - 1 / (132 y^10) + ...
    ```

    The recurrence lifts `x` to `y = x + 8`, where the series is exact to
    4e-13, so the result is accurate to float64 rounding for `x > 0`, and
    it is differentiable with the backends' automatic differentiation.
    Values `x <= 0` are not supported (the variational Bayes routing takes
    it at `x >= 1/2` only).

    Args:
        x: float tensor, `x > 0`.

    Returns:
        `psi(x)`, shaped like `x`.

    Examples:

        >>> round(float(digamma(np.array(1.0))), 6)  # -Euler's constant
        -0.577216
    """
    x = ops.convert_to_tensor(x)
    shifted = x + _SHIFT
    recurrence = ops.zeros_like(x)
    for k in range(_SHIFT):
        recurrence = recurrence + 1.0 / (x + k)
    inverse_square = 1.0 / ops.square(shifted)
    series = ops.zeros_like(x)
    for coefficient in reversed(_SERIES):  # Horner's rule in 1 / y^2.
        series = (series + coefficient) * inverse_square
    return ops.log(shifted) - 0.5 / shifted - series - recurrence
