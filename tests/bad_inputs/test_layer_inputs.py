"""A layer called, after it was built, with inputs of other sizes than
its weights were built for gets Keras's ValueError naming the layer, the
axis and both sizes; sizes the layer is free in still work (issue 17,
item 8). Layer arguments that would leave nothing to learn are refused
when the layer is made."""

import numpy as np
import tensorflow as tf

from keras_capsules import layers


def normal(*shape):
    return np.random.default_rng(0).normal(size=shape).astype("float32")


class LayerInputSizesTest(tf.test.TestCase):
    def assert_refused(self, layer, inputs, expected_size):
        with self.assertRaisesRegex(
            ValueError, f"incompatible with the layer.*value {expected_size}"
        ):
            layer(inputs)

    def test_dynamic_routing(self):
        layer = layers.DynamicRouting(3, 4)
        layer([normal(2, 6), normal(2, 6, 1, 8)])
        self.assert_refused(layer, [normal(2, 6), normal(2, 6, 1, 5)], 8)
        self.assert_refused(layer, [normal(2, 7), normal(2, 7, 1, 8)], 6)
        self.assert_refused(layer, [normal(2, 6), normal(2, 6, 4, 8)], 1)
        shared = layers.DynamicRouting(3, 4, share_weights=True)
        shared([normal(2, 6), normal(2, 6, 1, 8)])
        _, capsules = shared([normal(2, 9), normal(2, 9, 1, 8)])
        self.assertEqual(capsules.shape, (2, 3, 1, 4))
        # A grid is routed as a list of its capsules.
        grid = layers.DynamicRouting(3, 4)
        _, capsules = grid([normal(2, 2, 3, 4), normal(2, 2, 3, 4, 1, 8)])
        self.assertEqual(capsules.shape, (2, 3, 1, 4))
        self.assert_refused(
            grid, [normal(2, 3, 3, 4), normal(2, 3, 3, 4, 1, 8)], 2
        )

    def test_heinsen_routing(self):
        layer = layers.HeinsenRouting(3, 4)
        layer([normal(2, 6), normal(2, 6, 1, 8)])
        self.assert_refused(layer, [normal(2, 6), normal(2, 6, 1, 5)], 8)
        self.assert_refused(layer, [normal(2, 7), normal(2, 7, 1, 8)], 6)

    def test_matrix_capsule_em_routing(self):
        listed = layers.MatrixCapsuleEMRouting(3)
        listed([normal(2, 6), normal(2, 6, 4, 4)])
        self.assert_refused(listed, [normal(2, 7), normal(2, 7, 4, 4)], 6)
        grid = layers.MatrixCapsuleEMRouting(3)
        grid([normal(2, 3, 3, 5), normal(2, 3, 3, 5, 4, 4)])
        # Any grid size: the weights are per capsule type ...
        logits, _ = grid([normal(2, 4, 2, 5), normal(2, 4, 2, 5, 4, 4)])
        self.assertEqual(logits.shape, (2, 3))
        # ... but not another number of types.
        self.assert_refused(
            grid, [normal(2, 3, 3, 6), normal(2, 3, 3, 6, 4, 4)], 5
        )

    def test_conv_matrix_capsules(self):
        layer = layers.ConvMatrixCapsules(3, 3)
        layer([normal(2, 5, 5, 2), normal(2, 5, 5, 2, 4, 4)])
        self.assert_refused(
            layer, [normal(2, 5, 5, 3), normal(2, 5, 5, 3, 4, 4)], 2
        )

    def test_capsule_regression(self):
        regression = layers.CapsuleRegression(3, 2)
        regression(normal(2, 10))
        self.assert_refused(regression, normal(2, 12), 10)


class LayerArgumentsTest(tf.test.TestCase):
    def test_standardized_costs_need_three_output_types(self):
        # Z-scores of two costs are -1 and +1 whatever the costs.
        def settings(normalization):
            return layers.EMRouting(cost_normalization=normalization)

        makers = (
            lambda count, **kwargs: layers.MatrixCapsuleEMRouting(
                count, **kwargs
            ),
            lambda count, **kwargs: layers.ConvMatrixCapsules(
                count, 3, **kwargs
            ),
        )
        for make in makers:
            for normalization in ("standardize", "per_mass_standardize"):
                for count in (1, 2):
                    with self.assertRaisesRegex(
                        ValueError, f"at least 3 .*Received {count}"
                    ):
                        make(count, routing=settings(normalization))
                make(3, routing=settings(normalization))
            make(2, routing=settings("per_child"))


if __name__ == "__main__":
    tf.test.main()
