"""Finite inputs stay finite: vectors of length 1e20-1e30 (whose squares
overflow float32) and float16 tensors (where 1e-12 underflows) in the
norms, the squash and dynamic routing (issue 17, item 7)."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import ops


def squash_reference(vectors):
    """Sabour eq. 1 in float64: |s|^2 / (1 + |s|^2) s / |s|."""
    vectors = np.asarray(vectors, np.float64)
    norm = np.linalg.norm(vectors, axis=-1, keepdims=True)
    safe = np.where(norm > 0, norm, 1.0)
    return np.where(norm > 0, vectors / safe * norm**2 / (1 + norm**2), 0.0)


class LargeInputsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters(1e20, 1e30, 3e38)
    def test_norm_and_squash_of_huge_vectors(self, scale):
        vectors = np.array([[scale, 0.0, 0.0], [0.6, -0.8, 0.0]], "float32")
        vectors[0, 1] = scale / 2
        norms = ops.safe_norm(vectors)
        self.assertAllClose(
            norms, np.linalg.norm(vectors.astype(np.float64), axis=-1)
        )
        squashed = ops.squash(vectors)
        self.assertTrue(np.all(np.isfinite(squashed)))
        self.assertAllClose(squashed, squash_reference(vectors), atol=1e-6)

    def test_dynamic_routing_of_huge_votes_is_finite(self):
        votes = np.random.default_rng(0).normal(size=(2, 6, 3, 4)) * 1e25
        capsules = ops.dynamic_routing(votes.astype("float32"))
        self.assertTrue(np.all(np.isfinite(capsules)))
        lengths = np.linalg.norm(capsules, axis=-1)
        self.assertAllClose(lengths, np.ones_like(lengths), atol=1e-6)


class HalfPrecisionTest(tf.test.TestCase):
    def test_float16_norm_and_squash_at_zero_and_ordinary_points(self):
        vectors = np.array([[0.0, 0.0], [3.0, 4.0], [1e-3, 0.0]], "float16")
        squashed = ops.squash(vectors)
        self.assertEqual(squashed.dtype, "float16")
        self.assertAllClose(
            squashed, squash_reference(vectors), atol=1e-3, rtol=1e-3
        )
        self.assertEqual(ops.safe_norm(vectors).dtype, "float16")
        with tf.GradientTape() as tape:
            tensor = tf.constant(vectors)
            tape.watch(tensor)
            total = tf.reduce_sum(ops.squash(tensor))
        gradient = tape.gradient(total, tensor)
        self.assertTrue(np.all(np.isfinite(gradient)))

    def test_float16_dynamic_routing_routes_in_float32(self):
        # At vote scale 100 the agreements overflow float16 (NaN before).
        votes = np.random.default_rng(0).normal(size=(2, 6, 3, 4)) * 100
        half = ops.dynamic_routing(votes.astype("float16"))
        self.assertEqual(half.dtype, "float16")
        full = ops.dynamic_routing(votes.astype("float16").astype("float32"))
        self.assertAllClose(half, full, atol=1e-3)


class RoutingInputTypesTest(tf.test.TestCase):
    def test_integer_votes_route_as_floats(self):
        votes = np.arange(2 * 5 * 3 * 4).reshape(2, 5, 3, 4) % 7 - 3
        self.assertAllClose(
            ops.dynamic_routing(votes), ops.dynamic_routing(votes * 1.0)
        )

    def test_no_output_capsules_is_refused(self):
        with self.assertRaisesRegex(ValueError, "at least one capsule"):
            ops.dynamic_routing(np.zeros((2, 5, 0, 4), "float32"))


if __name__ == "__main__":
    tf.test.main()
