"""Products and bounds keep their inputs' dtype and float64's precision
on every Keras backend (Keras's PyTorch backend computes these in float32
for float64 operands)."""

import importlib

import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules.ops import dtype_keeping, fast_paths
from tests.every_backend import BACKEND, TestCase


def _operands(dtype):
    rng = np.random.default_rng(0)
    # 1 + tiny steps: float32 rounds them away, float64 keeps them.
    a = (1.0 + 1e-10 * rng.integers(1, 9, size=(2, 3, 4))).astype(dtype)
    b = (1.0 + 1e-10 * rng.integers(1, 9, size=(2, 4, 5))).astype(dtype)
    return a, b


class DtypeKeepingTest(TestCase):
    def test_float64_products_keep_float64s_precision(self):
        a, b = _operands("float64")
        got = dtype_keeping.matmul(a, b)
        self.assertDTypeEqual(got, "float64")
        # Each entry is a sum of 4 products near 1: float64's rounding
        # is ~4 * 2.2e-16 relative; float32's would be ~1e-7.
        self.assertAllClose(got, a @ b, rtol=1e-14, atol=0.0)

    @parameterized.named_parameters(
        ("maximum", dtype_keeping.maximum, np.maximum),
        ("minimum", dtype_keeping.minimum, np.minimum),
    )
    def test_float64_bounds_keep_float64s_precision(self, bound, reference):
        a, _ = _operands("float64")
        for other in (1.0 + 4e-10, np.full_like(a, 1.0 + 4e-10)):
            got = bound(a, other)
            self.assertDTypeEqual(got, "float64")
            self.assertAllEqual(got, reference(a, other))

    @parameterized.named_parameters(
        ("matmul", dtype_keeping.matmul, np.matmul, True),
        ("maximum", dtype_keeping.maximum, np.maximum, False),
        ("minimum", dtype_keeping.minimum, np.minimum, False),
    )
    def test_float32_equals_the_keras_op(self, function, reference, product):
        rng = np.random.default_rng(1)
        a = rng.normal(size=(2, 3, 4)).astype("float32")
        b = rng.normal(size=(2, 4, 5) if product else (2, 3, 4))
        b = b.astype("float32")
        got = function(a, b)
        with fast_paths.neutral_forms():
            neutral = function(a, b)
        self.assertDTypeEqual(got, "float32")
        self.assertDTypeEqual(neutral, "float32")
        # float32 products of 4 terms of scale 1: rounding ~1e-6.
        self.assertAllClose(got, neutral, rtol=1e-6, atol=1e-6)
        self.assertAllClose(got, reference(a, b), rtol=1e-6, atol=1e-6)

    def test_pytorchs_forms_are_known_names(self):
        if BACKEND != "torch":
            self.skipTest("PyTorch's forms import on PyTorch only.")
        forms = importlib.import_module("keras_capsules.backend.torch")
        self.assertContainsSubset(forms.__all__, fast_paths.NAMES)
        self.assertIs(fast_paths.fast_path("matmul"), forms.matmul)


if __name__ == "__main__":
    absltest.main()
