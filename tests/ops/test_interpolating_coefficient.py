"""I_s(beta) against an independent high-precision quadrature of eq. 31."""

import functools
import importlib

import mpmath
import numpy as np
from absl.testing import absltest, parameterized
from keras import ops

from keras_capsules import ops as capsule_ops
from tests.every_backend import (
    MODES,
    TestCase,
    numpy,
    run_in,
    value_and_gradients,
)

# The package exports a function of the module's name; fetch the module.
ic_module = importlib.import_module(
    "keras_capsules.ops.interpolating_coefficient"
)

_REFERENCE_ABSOLUTE_ACCURACY = 1e-35
ORDERS = (0.0, 0.5, 1.0, 2.5, 5.0, 40.0, 256.0)
# beta from 1e-8 to 1e6, plus the regime boundaries of the implementation.
BETAS = np.unique(
    np.concatenate(
        [
            np.logspace(-8, 6, 29),
            [
                0.4,
                0.99,
                1.0,
                1.5,
                2.0,
                3.4,
                3.5,
                3.6,
                6.0,
                39.9,
                40.0,
                40.1,
                41.0,
                42.0,
                255.0,
                257.0,
                258.0,
                300.0,
            ],
        ]
    )
)


@functools.cache
def reference(beta, s):
    """I_s(beta) = beta int_0^1 rho^s e^(-(1 - rho) beta) d rho, and eq. 38.

    mpmath quadrature at 40 digits, split where the integrand's mass lies
    (within ~1 / beta of rho = 1).
    """
    with mpmath.workdps(40):
        b, s_mp = mpmath.mpf(beta), mpmath.mpf(s)
        if b == 0:
            return 0.0, float(1 / (s_mp + 1))
        cuts = sorted(
            {mpmath.mpf(0), mpmath.mpf(1)}
            | {1 - mpmath.mpf(k) / b for k in (1, 10, 100, 1000) if k < b}
        )
        value = b * mpmath.quad(
            lambda r: r**s_mp * mpmath.exp(-(1 - r) * b), cuts
        )
        derivative = 1 - (b + s_mp) / b * value  # eq. 38
        return float(value), float(derivative)


def references(s):
    values, derivatives = zip(*(reference(float(b), s) for b in BETAS))
    return np.array(values), np.array(derivatives)


class InterpolatingCoefficientTest(TestCase):
    @parameterized.product(
        s=ORDERS, dtype_and_tolerance=(("float64", 1e-6), ("float32", 2e-5))
    )
    def test_matches_quadrature(self, s, dtype_and_tolerance):
        dtype, tolerance = dtype_and_tolerance
        expected, _ = references(s)
        actual = numpy(
            capsule_ops.interpolating_coefficient(np.asarray(BETAS, dtype), s)
        )
        self.assertAllClose(actual, expected, rtol=tolerance, atol=0.0)

    @parameterized.product(
        s=ORDERS, dtype_and_tolerance=(("float64", 1e-6), ("float32", 2e-5))
    )
    def test_gradient_is_eq_38(self, s, dtype_and_tolerance):
        dtype, tolerance = dtype_and_tolerance
        _, expected = references(s)
        _, (gradient,) = value_and_gradients(
            lambda beta: capsule_ops.interpolating_coefficient(beta, s),
            [np.asarray(BETAS, dtype)],
        )
        gradient = numpy(gradient)
        # Eq. 38 at 40 digits cancels down to ~1e-35 absolute accuracy, which
        # matters only where the derivative is e^-beta (s = 0, large beta).
        self.assertAllClose(
            gradient,
            expected,
            rtol=tolerance,
            atol=_REFERENCE_ABSOLUTE_ACCURACY,
        )

    @parameterized.parameters(0.0, 0.5, 2.5, 40.0)
    def test_second_coefficient_is_next_order(self, s):
        beta = np.asarray(BETAS, "float64")
        _, next_order = capsule_ops.interpolating_coefficients(beta, s)
        expected = capsule_ops.interpolating_coefficient(beta, s + 1.0)
        self.assertAllClose(next_order, expected, rtol=1e-12, atol=0.0)

    def test_half_integer_order_keeps_recursion(self):
        # Eq. 33 links half-integer orders: I_s = 1 - (s / beta) I_(s-1).
        beta = np.logspace(-1, 3, 9)
        lower = capsule_ops.interpolating_coefficient(beta, 3.5)
        upper = capsule_ops.interpolating_coefficient(beta, 4.5)
        self.assertAllClose(upper, 1.0 - 4.5 / beta * numpy(lower), rtol=1e-10)

    def test_within_bounds_and_increasing(self):
        beta = np.logspace(-6, 6, 200)
        for s in (1.0, 7.5, 80.0):
            value = numpy(capsule_ops.interpolating_coefficient(beta, s))
            self.assertTrue(np.all(np.diff(value) > 0))
            self.assertTrue(
                np.all(value >= beta / (beta + s + 1) * (1 - 1e-12))
            )
            self.assertTrue(np.all(value <= beta / (beta + s) * (1 + 1e-12)))

    def test_finite_at_extremes(self):
        beta = np.asarray([0.0, 1e-30, 1e30, np.inf], "float32")
        value, (gradient,) = value_and_gradients(
            lambda beta: capsule_ops.interpolating_coefficient(beta, 20.0),
            [beta],
        )
        value, gradient = numpy(value), numpy(gradient)
        self.assertAllEqual(value[[0, 3]], [0.0, 1.0])
        self.assertAllClose(gradient[0], 1.0 / 21.0)
        self.assertTrue(np.all(np.isfinite(gradient)))

    @parameterized.product(dtype=("float32", "float64"), mode=MODES)
    def test_every_mode_matches_eager(self, dtype, mode):
        beta = np.asarray(BETAS, dtype)
        compiled = run_in(
            lambda b: capsule_ops.interpolating_coefficients(b, 12.5), mode
        )
        for a, b in zip(
            compiled(beta), capsule_ops.interpolating_coefficients(beta, 12.5)
        ):
            self.assertAllClose(a, b, rtol=1e-6)

    def test_half_precision_computes_in_float32(self):
        beta = np.asarray([0.5, 5.0, 500.0], "float16")
        value = capsule_ops.interpolating_coefficient(beta, 3.0)
        self.assertDTypeEqual(value, "float16")
        expected = capsule_ops.interpolating_coefficient(
            beta.astype("float64"), 3.0
        )
        self.assertAllClose(ops.cast(value, "float32"), expected, rtol=1e-3)

    @parameterized.parameters(-1.0, float("nan"), float("inf"), "two", None)
    def test_bad_order_raises(self, s):
        with self.assertRaisesRegex(ValueError, "order `s`"):
            capsule_ops.interpolating_coefficient(1.0, s)

    def test_backward_steps_shrink_error_below_tolerance(self):
        for s in (0.0, 3.0, 256.0):
            steps = ic_module.backward_steps(s, "float64")
            damping = np.prod(
                [(s + 1) / (s + 1 + j) for j in range(1, steps + 1)]
            )
            self.assertLess(damping, 1e-18)


if __name__ == "__main__":
    absltest.main()
