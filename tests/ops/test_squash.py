"""The squash, and the logit of a squashed length, against NumPy (on
every Keras backend)."""

import numpy as np
from absl.testing import absltest
from keras import ops

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, value_and_gradients


def squash_reference(s):
    """Sabour et al. eq. 1 for one vector."""
    norm_squared = float(np.dot(s, s))
    if norm_squared == 0.0:
        return np.zeros_like(s)
    return norm_squared / (1.0 + norm_squared) * s / np.sqrt(norm_squared)


class SquashedLengthLogitTest(TestCase):
    def test_is_twice_the_log_length_of_the_total_input(self):
        totals = np.random.default_rng(0).normal(size=(3, 4, 8)) * [
            [[0.1]],
            [[1.0]],
            [[5.0]],
        ]
        squashed = np.apply_along_axis(squash_reference, -1, totals)
        logits = capsule_ops.squashed_length_logit(squashed)
        self.assertAllClose(
            logits, 2 * np.log(np.linalg.norm(totals, axis=-1)), rtol=1e-9
        )

    def test_logistic_gives_back_the_length(self):
        squashed = capsule_ops.squash(
            np.random.default_rng(1).normal(size=(4, 5, 16)).astype("f4")
        )
        logits = capsule_ops.squashed_length_logit(squashed)
        self.assertAllClose(
            ops.sigmoid(logits), np.linalg.norm(squashed, axis=-1), rtol=1e-5
        )

    def test_several_capsule_axes(self):
        poses = np.full((2, 3, 4, 4), 0.1)  # Length 0.4 over the 4 x 4.
        logits = capsule_ops.squashed_length_logit(poses, axis=(-2, -1))
        self.assertAllClose(logits, np.full((2, 3), np.log(0.4 / 0.6)))

    def test_hard_points_stay_finite(self):
        # A zero capsule, and a float32 length that rounds to 1.
        squashed = capsule_ops.squash(
            np.array([[0.0, 0.0], [1e5, 0.0]], "float32")
        )
        logits, (gradient,) = value_and_gradients(
            capsule_ops.squashed_length_logit, [squashed]
        )
        self.assertAllClose(logits, [np.log(1e-6), 16.6355], atol=1e-3)
        self.assertAllInRange(gradient, -1e7, 1e7)


if __name__ == "__main__":
    absltest.main()
