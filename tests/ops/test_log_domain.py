"""`1 - exp(x)` and its log near 0 without `expm1` (on every Keras
backend)."""

import numpy as np
from absl.testing import absltest

from keras_capsules.ops import log_domain
from tests.every_backend import TestCase, numpy

_POINTS = -np.array([0.0, 1e-30, 1e-12, 1e-4, 0.05, 0.0999, 0.1, 0.5, 30.0])


class LogDomainTest(TestCase):
    def test_one_minus_exp_matches_expm1(self):
        expected = -np.expm1(_POINTS)
        self.assertAllClose(
            log_domain.one_minus_exp(_POINTS), expected, rtol=1e-15, atol=0
        )
        # float32: at |x| = 0.1 exp's rounding costs 6e-8 / 0.1.
        self.assertAllClose(
            log_domain.one_minus_exp(_POINTS.astype("float32")),
            expected,
            rtol=1e-6,
            atol=0,
        )

    def test_log_one_minus_exp_is_finite_at_zero(self):
        tiny = float(np.finfo("float64").tiny)
        logs = numpy(log_domain.log_one_minus_exp(_POINTS, tiny))
        self.assertEqual(logs[0], np.log(tiny))
        self.assertAllClose(
            logs[1:], np.log(-np.expm1(_POINTS[1:])), rtol=1e-14
        )


if __name__ == "__main__":
    absltest.main()
