"""Gradients of the routing layers under XLA match eager mode.

Under XLA the layers take other forms than in eager mode: the bias rides
in the vote product (`capsule_votes`), tensors read by several fusions
are written once through a custom gradient (TensorFlow's
`written_once`), and the EM M-steps send their votes' gradient through
TensorFlow's `gradient_probes`, which forms it in one pass
(`keras_capsules/backend/tensorflow/`). The gradients
to the inputs and the weights must agree. Tolerance: 1e-4 of each
gradient's largest entry; the two modes differ by up to 2.5e-5 of it in
float32 (the routing's exponentials and logarithms summed in another
order), and any error in a rewritten form is of the gradient's own size
(a probes' gradient with the means folded into one term missed by 4e-4
to 5e-4 in the padded convolution).
"""

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import layers


def matrix_capsules(rng, grid, types):
    return [
        tf.constant(rng.uniform(0.05, 1.0, (2, *grid, types)), tf.float32),
        tf.constant(rng.normal(size=(2, *grid, types, 4, 4)), tf.float32),
    ]


def heinsen_inputs(rng, count):
    return [
        tf.constant(rng.normal(size=(2, count)), tf.float32),
        tf.constant(rng.normal(size=(2, count, 4, 4)), tf.float32),
    ]


CASES = (
    (
        "conv_strided",
        lambda: layers.ConvMatrixCapsules(3, 3, strides=2),
        lambda rng: matrix_capsules(rng, (5, 5), 2),
    ),
    (
        "conv_same",
        lambda: layers.ConvMatrixCapsules(3, 3, padding="same"),
        lambda rng: matrix_capsules(rng, (4, 4), 2),
    ),
    (
        "class_capsules",
        lambda: layers.MatrixCapsuleEMRouting(4),
        lambda rng: matrix_capsules(rng, (2, 3), 2),
    ),
    (
        "heinsen_votes",
        lambda: layers.HeinsenRouting(3, 4),
        lambda rng: heinsen_inputs(rng, 6),
    ),
)


class XlaGradientsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.named_parameters(*CASES)
    def test_match_eager_mode(self, make_layer, make_inputs):
        inputs = make_inputs(np.random.default_rng(0))
        # The kernels keep their initialiser's draw: the same every run.
        keras.utils.set_random_seed(0)
        layer = make_layer()
        layer(inputs)
        # Every bias and beta away from 0, so that their gradients count.
        rng = np.random.default_rng(1)
        for weight in layer.trainable_weights:
            if len(weight.shape) < 4 or "bias" in weight.name:
                weight.assign(rng.normal(scale=0.3, size=weight.shape))

        def gradients(inputs):
            with tf.GradientTape() as tape:
                tape.watch(inputs)
                outputs = tf.nest.flatten(layer(inputs))
                loss = tf.add_n([tf.reduce_sum(o * o) for o in outputs])
            return tape.gradient(loss, [*inputs, *layer.trainable_weights])

        eager = gradients(inputs)
        compiled = tf.function(gradients, jit_compile=True)(inputs)
        self.assertEqual(len(eager), len(compiled))
        for want, got in zip(eager, compiled):
            want = np.asarray(want)
            self.assertGreater(np.abs(want).max(), 0.0)
            self.assertAllClose(
                got, want, rtol=0.0, atol=1e-4 * np.abs(want).max()
            )


if __name__ == "__main__":
    tf.test.main()
