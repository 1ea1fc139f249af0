"""`spectral_conv2d` against a loop-by-loop NumPy cross-correlation, its
gradients against the correlation's written-out gradients, and the
multiply-add counts that choose it."""

import keras
import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules.ops.spectral_convolution import (
    convolution_multiply_adds,
    spectral_conv2d,
    spectral_is_cheaper,
)
from tests.every_backend import (
    MODES,
    TestCase,
    numpy,
    run_in,
    value_and_gradients,
)


def correlation_reference(images, kernel, strides):
    """`y[b, i, j, o] = sum_{r,s,c} x[b, sh i + r, sw j + s, c]
    k[r, s, c, o]`, one output position at a time."""
    batch, height, width, _ = images.shape
    kernel_height, kernel_width, _, filters = kernel.shape
    out_height = (height - kernel_height) // strides[0] + 1
    out_width = (width - kernel_width) // strides[1] + 1
    result = np.zeros((batch, out_height, out_width, filters))
    for i in range(out_height):
        for j in range(out_width):
            top, left = strides[0] * i, strides[1] * j
            window = images[
                :, top : top + kernel_height, left : left + kernel_width
            ]  # (b, kh, kw, C)
            result[:, i, j] = np.tensordot(window, kernel, axes=3)
    return result


def correlation_gradients_reference(images, kernel, strides, upstream):
    """Gradients of `sum(G * y)`: each output position adds `G[b, i, j]
    k^T` to its window of `dx` and `window^T G[b, i, j]` to `dk`."""
    d_images, d_kernel = np.zeros(images.shape), np.zeros(kernel.shape)
    kernel_height, kernel_width = kernel.shape[:2]
    for i in range(upstream.shape[1]):
        for j in range(upstream.shape[2]):
            top, left = strides[0] * i, strides[1] * j
            rows = slice(top, top + kernel_height)
            columns = slice(left, left + kernel_width)
            d_images[:, rows, columns] += np.einsum(
                "bo,rsco->brsc", upstream[:, i, j], kernel
            )
            d_kernel += np.einsum(
                "brsc,bo->rsco", images[:, rows, columns], upstream[:, i, j]
            )
    return d_images, d_kernel


def _case(image_shape, kernel_shape, strides, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.normal(size=image_shape)
    kernel = rng.normal(size=kernel_shape)
    expected = correlation_reference(images, kernel, strides)
    upstream = rng.normal(size=expected.shape)
    return images, kernel, expected, upstream


# (image (b, H, W, C), kernel (kh, kw, C, O), strides): even and odd
# sizes, CapsNet's 9x9 stride 2, unequal strides, a kernel the image's
# size (one output), a 1x1 kernel, a one-column image.
_SHAPES = (
    ("capsnet_like", (2, 12, 12, 3), (9, 9, 3, 4), (2, 2)),
    ("odd_rectangular", (2, 11, 8, 2), (3, 4, 2, 3), (1, 2)),
    ("unequal_strides", (1, 7, 9, 2), (7, 1, 2, 2), (3, 1)),
    ("kernel_fills_image", (2, 5, 6, 2), (5, 6, 2, 3), (1, 1)),
    ("one_by_one", (1, 6, 5, 2), (1, 1, 2, 3), (2, 2)),
    ("one_column", (2, 6, 1, 1), (2, 1, 1, 2), (1, 1)),
)


class SpectralConvolutionTest(TestCase):
    @parameterized.named_parameters(*_SHAPES)
    def test_matches_reference_in_float64(self, image_shape, kernel_shape, s):
        images, kernel, expected, _ = _case(image_shape, kernel_shape, s)
        result = spectral_conv2d(images, kernel, s)
        self.assertDTypeEqual(result, "float64")
        self.assertAllClose(result, expected, rtol=1e-12, atol=1e-12)

    @parameterized.product(mode=MODES, dtype=["float64", "float32"])
    def test_gradients_match_reference(self, mode, dtype):
        images, kernel, expected, upstream = _case(
            (2, 10, 9, 3), (5, 4, 3, 2), (2, 1), seed=1
        )

        def run(images, kernel, upstream):
            result, gradients = value_and_gradients(
                lambda x, k: spectral_conv2d(x, k, (2, 1)),
                [images, kernel],
                upstream,
            )
            return [result, *gradients]

        tensors = [np.asarray(x, dtype) for x in (images, kernel, upstream)]
        results = run_in(run, mode)(*tensors)
        wanted = [
            expected,
            *correlation_gradients_reference(images, kernel, (2, 1), upstream),
        ]
        tolerance = 1e-12 if dtype == "float64" else 1e-5
        for result, want in zip(results, wanted):
            self.assertDTypeEqual(result, dtype)
            scale = np.abs(want).max()
            self.assertAllClose(
                numpy(result) / scale, want / scale, atol=tolerance, rtol=0
            )

    def test_same_padding_matches_keras_conv2d(self):
        images, kernel, _, _ = _case((2, 9, 8, 2), (4, 3, 2, 3), (2, 3))
        for strides in [(1, 1), (2, 3)]:
            expected = keras.ops.conv(images, kernel, strides, "same")
            result = spectral_conv2d(images, kernel, strides, padding="same")
            self.assertAllClose(result, expected, rtol=1e-12, atol=1e-12)

    def test_half_precision_is_computed_in_float32(self):
        images, kernel, expected, _ = _case((1, 9, 9, 4), (9, 9, 4, 2), (1, 1))
        scale = 0.05  # keeps each product inside float16's range.
        result = spectral_conv2d(
            (images * scale).astype("float16"),
            (kernel * scale).astype("float16"),
        )
        self.assertDTypeEqual(result, "float16")
        result = numpy(result).astype("float64")
        rounded = correlation_reference(
            np.float16(images * scale).astype(np.float64),
            np.float16(kernel * scale).astype(np.float64),
            (1, 1),
        )
        # float16's own rounding of the result: 2**-11 of its size.
        self.assertAllClose(result, rounded, rtol=2e-3, atol=1e-3)
        self.assertAllClose(result, expected * scale**2, rtol=2e-2, atol=2e-2)

    def test_zero_images_give_exact_zeros(self):
        _, kernel, _, _ = _case((1, 8, 8, 2), (3, 3, 2, 2), (1, 1))
        result = spectral_conv2d(np.zeros((1, 8, 8, 2)), kernel, 2)
        self.assertAllEqual(result, np.zeros((1, 3, 3, 2)))

    def test_a_nan_stays_in_its_image(self):
        images, kernel, _, _ = _case((2, 8, 8, 1), (3, 3, 1, 1), (1, 1))
        images[1, 4, 4, 0] = np.nan
        result = numpy(spectral_conv2d(images, kernel))
        self.assertTrue(np.isfinite(result[0]).all())
        self.assertTrue(np.isnan(result[1]).any())

    def test_empty_batch(self):
        _, kernel, _, _ = _case((1, 6, 6, 2), (3, 3, 2, 4), (1, 1))
        result = spectral_conv2d(np.zeros((0, 6, 6, 2)), kernel, 2)
        self.assertEqual(result.shape, (0, 2, 2, 4))

    def test_multiply_adds(self):
        count = convolution_multiply_adds((20, 20), (9, 9, 256, 256), 2)
        # CapsNet's PrimaryCaps: 6x6 outputs of 81 taps per channel pair.
        self.assertEqual(count["direct"], 36 * 81 * 256 * 256)
        # 3 real products over 20 x 11 frequencies per channel pair, and
        # the transforms of 256 input and 256 output maps.
        self.assertEqual(
            count["spectral"],
            3 * 20 * 11 * 256 * 256
            + 256 * (2 * 11 * 20 * 20 + 11 * 60 * 40)
            + 256 * (11 * 12 * 60 + 6 * 22 * 6),
        )
        self.assertTrue(spectral_is_cheaper((20, 20), (9, 9, 256, 256), 2))
        # "same" pads 20 to 27 (10 outputs of stride 2, 9 taps).
        same = convolution_multiply_adds((20, 20), (9, 9, 4, 4), 2, "same")
        self.assertEqual(same["direct"], 10 * 10 * 81 * 4 * 4)
        self.assertEqual(
            same["spectral"],
            convolution_multiply_adds((27, 27), (9, 9, 4, 4), 2)["spectral"],
        )
        # CapsNet's first layer has one input channel: its transforms cost
        # more than the direct convolution.
        self.assertFalse(spectral_is_cheaper((28, 28), (9, 9, 1, 256), 1))
        self.assertFalse(spectral_is_cheaper((None, 20), (9, 9, 8, 8), 1))
        self.assertFalse(spectral_is_cheaper((5, 20), (9, 9, 8, 8), 1))

    def test_rejects_bad_input(self):
        kernel = np.zeros((3, 3, 2, 4))
        with self.assertRaisesRegex(ValueError, r"known H, W, C.*\(2, 8, 8\)"):
            spectral_conv2d(np.zeros((2, 8, 8)), kernel)
        with self.assertRaisesRegex(ValueError, r"C = 2.*\(3, 3, 1, 4\)"):
            spectral_conv2d(np.zeros((1, 8, 8, 2)), np.zeros((3, 3, 1, 4)))
        with self.assertRaisesRegex(ValueError, r"no larger.*\(2, 8\)"):
            spectral_conv2d(np.zeros((1, 2, 8, 2)), kernel)
        with self.assertRaisesRegex(ValueError, r"positive strides.*\(0, 1\)"):
            spectral_conv2d(np.zeros((1, 8, 8, 2)), kernel, (0, 1))
        with self.assertRaisesRegex(ValueError, "padding='full'"):
            spectral_conv2d(np.zeros((1, 8, 8, 2)), kernel, padding="full")


if __name__ == "__main__":
    absltest.main()
