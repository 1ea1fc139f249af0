"""The interpolating coefficient I_s(beta) of capsule regression.

Saul, "Capsule regression", eqs. 13-14 and appendix A.1:

```none
I_s(beta) = beta e^-beta int_0^1 rho^s e^(rho beta) d rho          (eq. 31)
lambda_0 = I_(dm/2),  lambda_1 = I_(dm/2 + 1)                       (eqs. 13-14)
I_s = 1 - (s / beta) I_(s-1)          forward, stable for beta > s  (eq. 33)
I_s = beta / (s + 1) (1 - I_(s+1))    backward, stable for beta <= s (eq. 35)
beta / (beta + s + 1) <= I_s <= beta / (beta + s)                   (eq. 34)
dI_s / dbeta = 1 - ((beta + s) / beta) I_s                          (eq. 38)
```

The paper needs integer s (dm even). Here s is any real s >= 0: write
s = s0 + n with s0 in [0, 1) and integer n. For beta > s + 1 the forward
recursion runs n steps up from I_(s0)(beta), which comes from one of two
series with positive terms or no cancellation:

```none
I_s0 = sum_k Poisson(k; beta) beta / (s0 + 1 + k)      (beta <= 40)
I_s0 = 1 - sum_(k>=1) c_k / beta^k,  c_1 = s0, c_(k+1) = c_k (k - s0)
                                                      (beta > 40, asymptotic)
```

For beta <= s + 1 the backward recursion starts from the midpoint of the bounds
(34) at order s + 1 + K, with K chosen from s so that the start's error has
shrunk below the dtype's precision by the time it reaches order s.

The derivative is carried through the same recursions (each one
differentiated in beta, and stable in the same regime), so it equals eq. 38
without the cancellation that evaluating eq. 38 directly suffers at small and
large beta. It is the gradient of the ops below.
"""

import math

import keras
from keras import ops

from keras_capsules.ops import dtype_keeping

# Above this beta, I_s0 comes from its asymptotic series; at or below, from
# the Poisson-weighted series. 40 keeps the asymptotic series' smallest term
# below 1e-17 and the Poisson series short.
_SERIES_SWITCH_BETA = 40.0
# Poisson(k; 40) summed over k > 120 is below 1e-18.
_POISSON_TERMS = 120
# The asymptotic series' terms still fall at k = 40 when beta > 40.
_ASYMPTOTIC_TERMS = 40
# Relative error the backward recursion's start must shrink to, per dtype.
_BACKWARD_TOLERANCE = {"float32": 1e-9, "float64": 1e-18}
_MIN_BACKWARD_STEPS = 4


def interpolating_coefficient(beta, s):
    """Returns I_s(beta) of Saul eq. 31, elementwise, with gradient eq. 38.

    ```none
    paper     code    meaning
    beta      beta    (1 / 2 sigma^2) sum_i |W_i x|^2, eq. 12
    s         s       dm / 2 for lambda_0, dm / 2 + 1 for lambda_1
    I_s       return  rises from 0 (beta = 0) to 1 (beta -> inf)
    ```

    Args:
        beta: float tensor, `beta >= 0` (negative values are treated as 0).
        s: Python float, the order, `s >= 0` (need not be an integer).

    Returns:
        A tensor shaped like `beta`, in its dtype (float16 and bfloat16 are
        computed in float32; an integer `beta` in `keras.config.floatx()`).

    Examples:

        >>> np.round(ops.convert_to_numpy(
        ...     interpolating_coefficient(np.array([0.0, 1.0, 100.0]), 1.5)), 4)
        array([0.    , 0.3071, 0.9851])
    """
    return interpolating_coefficients(beta, s)[0]


def interpolating_coefficients(beta, s):
    """Returns `(I_s(beta), I_(s+1)(beta))`, i.e. `(lambda_0, lambda_1)`.

    Both come from one recursion and both have the exact derivative (eq. 38)
    as their gradient. Arguments as in `interpolating_coefficient`.

    Examples:

        >>> beta = np.array([1.0])
        >>> lambda_0, lambda_1 = interpolating_coefficients(beta, 1.5)
        >>> bool(lambda_1[0] < lambda_0[0])
        True
    """
    s = check_order(s)
    beta = ops.convert_to_tensor(beta)
    if not keras.backend.is_float_dtype(beta.dtype):
        beta = ops.cast(beta, keras.config.floatx())
    dtype = keras.backend.standardize_dtype(beta.dtype)
    dtype = dtype if dtype == "float64" else "float32"

    # One stacked output: Keras's PyTorch backend passes a custom gradient
    # the upstream gradient of a single output only, by keyword after the
    # inputs (the portable signature of `ops.custom_gradient`'s example).
    @ops.custom_gradient
    def coefficients(beta_in):
        values, derivatives = coefficients_and_derivatives(
            ops.cast(beta_in, dtype), s
        )
        stacked = ops.cast(ops.stack(values), beta_in.dtype)  # (2, ...)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            upstream = ops.cast(upstream, dtype)
            total = upstream[0] * derivatives[0] + upstream[1] * derivatives[1]
            return ops.cast(total, beta_in.dtype)

        return stacked, grad

    stacked = coefficients(beta)
    return stacked[0], stacked[1]


def check_order(s):
    """Returns `s` as a float after checking that it is a real number >= 0."""
    try:
        value = float(s)
    except (TypeError, ValueError):
        raise ValueError(
            "The order `s` of the interpolating coefficient must be a Python "
            f"number. Received: {s!r}. Pass a float, e.g. `d * m / 2`."
        ) from None
    if not value >= 0 or math.isinf(value):
        raise ValueError(
            "The order `s` of the interpolating coefficient must be a finite "
            f"real number >= 0. Received: s={s!r}."
        )
    return value


def coefficients_and_derivatives(beta, s):
    """Returns `((I_s, I_(s+1)), (dI_s, dI_(s+1)))` without gradients.

    `beta` is a float32 or float64 tensor; `s` a float >= 0.
    """
    beta = dtype_keeping.maximum(ops.stop_gradient(beta), 0.0)
    # Both orders s and s + 1 come from one recursion, so the forward one
    # must be stable at order s + 1 too.
    forward = beta > s + 1.0
    # Double where: each branch sees only inputs in its stable regime.
    forward_beta = ops.where(forward, beta, s + 2.0)
    backward_beta = ops.where(forward, 0.0, beta)
    forward_result = _forward(forward_beta, s)
    backward_result = _backward(
        backward_beta, s, keras.backend.standardize_dtype(beta.dtype)
    )
    values = tuple(
        ops.where(forward, f, b)
        for f, b in zip(forward_result[0], backward_result[0])
    )
    derivatives = tuple(
        ops.where(forward, f, b)
        for f, b in zip(forward_result[1], backward_result[1])
    )
    return values, derivatives


def _forward(beta, s):
    """Eq. 33 from I_(s0) up to I_s and I_(s+1); needs beta > s + 1."""
    steps = math.floor(s)
    s0 = s - steps
    value, derivative = _fractional_order(beta, s0)

    def step(k, state):
        value, derivative = state
        order = ops.cast(k, beta.dtype) + s0
        ratio = order / beta
        return (1.0 - ratio * value, ratio / beta * value - ratio * derivative)

    value, derivative = ops.fori_loop(1, steps + 1, step, (value, derivative))
    next_value, next_derivative = step(steps + 1, (value, derivative))
    return (value, next_value), (derivative, next_derivative)


def _fractional_order(beta, s0):
    """I_s0(beta) and its derivative for s0 in [0, 1) and beta > s0."""
    if s0 == 0.0:
        # 1 - e^-beta without `expm1` (ONNX has no such op): `_forward`
        # calls this at beta > 1 only, where it cancels nothing.
        return 1.0 - ops.exp(-beta), ops.exp(-beta)
    use_poisson = beta <= _SERIES_SWITCH_BETA
    poisson = _poisson_series(ops.where(use_poisson, beta, 1.0), s0)
    asymptotic = _asymptotic_series(
        ops.where(use_poisson, 2.0 * _SERIES_SWITCH_BETA, beta), s0
    )
    return tuple(
        ops.where(use_poisson, p, a) for p, a in zip(poisson, asymptotic)
    )


def _poisson_series(beta, s0):
    """I_s0 = sum_k e^-beta beta^k / k! * beta / (s0 + 1 + k), and d/dbeta.

    Expanding e^(rho beta) in eq. 31 gives positive terms; differentiating
    the Poisson weights (d/dbeta p_k = p_(k-1) - p_k) gives the derivative
    sum_k p_k (s0 + 2 + k - beta) / ((s0 + 1 + k)(s0 + 2 + k)).
    """

    def term(k, state):
        weight, value, derivative = state
        a = ops.cast(k, beta.dtype) + s0 + 1.0
        value = value + weight * beta / a
        derivative = derivative + weight * (a + 1.0 - beta) / (a * (a + 1.0))
        weight = weight * beta / ops.cast(k + 1, beta.dtype)
        return weight, value, derivative

    zeros = ops.zeros_like(beta)
    _, value, derivative = ops.fori_loop(
        0, _POISSON_TERMS, term, (ops.exp(-beta), zeros, zeros)
    )
    return value, derivative


def _asymptotic_series(beta, s0):
    """I_s0 = 1 - sum_(k>=1) c_k x^k with x = 1 / beta, and d/dbeta.

    Watson's lemma on eq. 31 in the variable 1 - rho; c_1 = s0 and
    c_(k+1) = c_k (k - s0). Both sums are evaluated by nested (Horner)
    products, so no coefficient overflows.
    """
    x = 1.0 / beta
    nested_value = ops.ones_like(beta)
    nested_slope = ops.full_like(beta, float(_ASYMPTOTIC_TERMS))
    for k in range(_ASYMPTOTIC_TERMS - 1, 0, -1):
        nested_value = 1.0 + x * (k - s0) * nested_value
        nested_slope = k + x * (k - s0) * nested_slope
    value = 1.0 - s0 * x * nested_value
    derivative = s0 * x * x * nested_slope
    return value, derivative


def _backward(beta, s, dtype):
    """Eq. 35 down from the bounds (34) at order s + 1 + K; beta <= s + 1."""
    steps = backward_steps(s, dtype)
    top = s + 1.0 + steps
    # Midpoint of the bounds (34), and the derivative of beta / (beta + c)
    # at the midpoint's order c.
    middle = top + 0.5
    value = beta / (beta + middle)
    derivative = middle / ops.square(beta + middle)

    def step(k, state):
        value, derivative = state
        divisor = top - ops.cast(k, dtype)  # q + 1, computing order q.
        return (
            beta / divisor * (1.0 - value),
            (1.0 - value) / divisor - beta / divisor * derivative,
        )

    next_value, next_derivative = ops.fori_loop(
        0, steps, step, (value, derivative)
    )
    value, derivative = step(steps, (next_value, next_derivative))
    return (value, next_value), (derivative, next_derivative)


def backward_steps(s, dtype):
    """Steps K of eq. 35 that shrink the start's error below tolerance.

    With beta <= s + 1, each step from order q + 1 to q multiplies the error
    by beta / (q + 1) <= (s + 1) / (q + 1).
    """
    log_tolerance = math.log(_BACKWARD_TOLERANCE[dtype])
    steps, log_error = 0, 0.0
    while log_error > log_tolerance or steps < _MIN_BACKWARD_STEPS:
        steps += 1
        log_error += math.log((s + 1.0) / (s + 1.0 + steps))
    return steps
