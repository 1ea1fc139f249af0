"""The plumbing of `bench.xla_programs` (its timings are measured, not
tested): the step cut into XLA programs computes the whole step's
gradients, and the timed chain is the products it names."""

import numpy as np
import tensorflow as tf

from bench import measure, xla_programs
from keras_capsules import layers


class XlaProgramsBenchTest(tf.test.TestCase):
    def test_a_step_in_parts_gives_the_whole_steps_gradients(self):
        rng = np.random.default_rng(0)
        cases = [
            (
                layers.ConvMatrixCapsules(2, 3, 1),
                [
                    tf.constant(rng.normal(size=(4, 4, 4, 2)), tf.float32),
                    tf.constant(
                        rng.normal(size=(4, 4, 4, 2, 4, 4)), tf.float32
                    ),
                ],
            ),
            (
                layers.DynamicRouting(2, 3),
                [
                    tf.constant(rng.normal(size=(4, 5)), tf.float32),
                    tf.constant(rng.normal(size=(4, 5, 1, 6)), tf.float32),
                ],
            ),
        ]
        for layer, inputs in cases:
            want = measure.forward_backward_step(layer, inputs, "xla")()
            # Two slices of two examples, each an XLA program of its own.
            got = measure.forward_backward_step_in_parts(layer, inputs, 2)()
            # The inputs' gradients, then every weight's.
            self.assertLen(got, len(want))
            for got_gradient, want_gradient in zip(got, want):
                self.assertAllClose(
                    got_gradient, want_gradient, rtol=1e-5, atol=1e-6
                )

    def test_a_batch_that_does_not_divide_is_refused(self):
        inputs = [tf.zeros((3, 5)), tf.zeros((3, 5, 1, 6))]
        with self.assertRaisesRegex(ValueError, "batch of 3 into 2"):
            measure.forward_backward_step_in_parts(
                layers.DynamicRouting(2, 3), inputs, 2
            )

    def test_the_chain_alternates_the_two_products(self):
        rng = np.random.default_rng(1)
        votes = rng.normal(size=(2, 3, 5, 4))
        weights = rng.normal(size=(2, 3, 1, 5))
        row = weights[..., 0, :]
        for index in range(6):
            if index % 2 == 0:
                row = np.einsum("abi,abih->abh", row, votes)
            else:
                row = np.einsum("abih,abh->abi", votes, row)
        got = xla_programs.product_chain(
            tf.constant(votes), tf.constant(weights)
        )
        self.assertAllClose(got, row.sum(), rtol=1e-10)


if __name__ == "__main__":
    tf.test.main()
