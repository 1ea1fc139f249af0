"""Gradients of EM routing with respect to the child activations at zero
activation (issue 17, item 6).

A parent that no active child votes for divides by `sum_i R_ij a_i = 0`;
with `1e-9` added to that sum the gradient there was ~1e10 in float32 and
inf in a float16 layer. The weighted mean of an empty parent is now
defined as 0 with a bounded gradient, and the vote offset, which the
outputs do not depend on, passes no gradient.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import ops
from keras_capsules.layers import MatrixCapsuleEMRouting

_RNG = np.random.default_rng(3)
# Far below what 1 / 1e-9 gave, far above what the outputs' unit-scale
# dependence on the activations gives.
_BOUND = 1e3


def _activation_gradient(route, activations):
    activations = tf.constant(activations)
    with tf.GradientTape() as tape:
        tape.watch(activations)
        outputs = route(activations)
        total = sum(
            tf.reduce_sum(tf.cast(output, "float32")) for output in outputs
        )
    return tape.gradient(total, activations).numpy().astype("float64")


class ZeroActivationGradientTest(tf.test.TestCase):
    def test_dense_routing(self):
        votes = _RNG.normal(size=(2, 6, 3, 16)).astype("float32")
        betas = np.zeros(3, "float32")

        def route(activations):
            return ops.em_routing(
                votes, activations, betas, betas, [1.0, 1.0, 1.0]
            )

        gradient = _activation_gradient(route, np.zeros((2, 6), "float32"))
        self.assertTrue(np.all(np.isfinite(gradient)))
        self.assertLess(np.max(np.abs(gradient)), _BOUND)

    def test_convolutional_routing(self):
        votes = _RNG.normal(size=(2, 2, 2, 2, 2, 2, 3, 4)).astype("float32")
        betas = np.zeros(3, "float32")
        activations = np.zeros((2, 3, 3, 2), "float32")
        activations[1] = 0.5  # Only the second example has active children.

        def route(activations):
            return ops.conv_em_routing(
                votes, activations, betas, betas, [1.0, 1.0]
            )

        gradient = _activation_gradient(route, activations)
        self.assertTrue(np.all(np.isfinite(gradient)))
        self.assertLess(np.max(np.abs(gradient[0])), _BOUND)

    def test_mixed_float16_layer(self):
        policy = keras.config.dtype_policy()
        keras.config.set_dtype_policy("mixed_float16")
        try:
            layer = MatrixCapsuleEMRouting(
                5, kernel_initializer=keras.initializers.RandomNormal(seed=1)
            )
            poses = _RNG.normal(size=(2, 3, 3, 4, 4, 4)).astype("float16")
            gradient = _activation_gradient(
                lambda activations: layer([activations, poses]),
                np.zeros((2, 3, 3, 4), "float16"),
            )
        finally:
            keras.config.set_dtype_policy(policy)
        self.assertTrue(np.all(np.isfinite(gradient)))
        self.assertLess(np.max(np.abs(gradient)), _BOUND)


if __name__ == "__main__":
    tf.test.main()
