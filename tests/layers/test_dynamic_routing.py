"""DynamicRouting: votes, masks, shared weights and argument checks."""

import importlib

import keras
import numpy as np
from absl.testing import absltest, parameterized
from keras import ops

from keras_capsules import layers
from keras_capsules import ops as capsule_ops
from tests.every_backend import (
    BACKEND,
    MODES,
    TestCase,
    loss_gradients,
    numpy,
    run_in,
)
from tests.ops.test_dynamic_routing import routing_reference


def votes_reference(inputs, kernel, shared):
    """u_hat[j|i] = W_ij u_i by loops over (i, j)."""
    batch, n_in, _ = inputs.shape
    n_out, d_out = kernel.shape[-3], kernel.shape[-1]
    votes = np.zeros((batch, n_in, n_out, d_out))
    for i in range(n_in):
        for j in range(n_out):
            weights = kernel[j] if shared else kernel[i, j]
            votes[:, i, j] = inputs[:, i] @ weights
    return votes


def as_contract(vectors):
    """`[logits, poses]` of squashed `(batch, n, d)` vectors: the contract's
    form of the vectors a dynamic-routing layer routes."""
    vectors = capsule_ops.squash(np.asarray(vectors, "float32"))
    return [capsule_ops.squashed_length_logit(vectors), vectors[:, :, None]]


class DynamicRoutingLayerTest(TestCase):
    @parameterized.named_parameters(("per_pair", False), ("shared", True))
    def test_matches_reference(self, shared):
        inputs = as_contract(np.random.default_rng(0).normal(size=(3, 5, 4)))
        layer = layers.DynamicRouting(
            3, 6, num_iterations=2, share_weights=shared
        )
        logits, capsules = layer(inputs)
        vectors = np.asarray(inputs[1])[:, :, 0]
        votes = votes_reference(vectors, numpy(layer.kernel), shared)
        self.assertAllClose(
            layer.capsule_votes(inputs[1])[:, :, :, 0], votes, atol=1e-5
        )
        expected = np.stack([routing_reference(v, 2) for v in votes])
        self.assertAllClose(capsules[:, :, 0], expected, atol=1e-4)
        self.assertAllClose(
            ops.sigmoid(logits), np.linalg.norm(expected, axis=-1), atol=1e-5
        )

    def test_shared_weights_accept_any_number_of_inputs(self):
        layer = layers.DynamicRouting(2, 3, share_weights=True)
        inputs = [keras.Input((None,)), keras.Input((None, 1, 4))]
        model = keras.Model(inputs, layer(inputs))
        rng = np.random.default_rng(1)
        for count in (1, 7, 30):
            _, capsules = model(as_contract(rng.normal(size=(2, count, 4))))
            self.assertEqual(capsules.shape, (2, 2, 1, 3))

    def test_a_mask_in_the_functional_api_drops_padded_inputs(self):
        rng = np.random.default_rng(2)
        logits, poses = as_contract(rng.normal(size=(2, 5, 4)))
        present = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
        # Padding holds anything.
        logits = np.where(present, logits, 7.0).astype("float32")
        poses = np.asarray(poses)
        inputs = [keras.Input((None,)), keras.Input((None, 1, 4))]
        mask = keras.Input((None,), dtype="bool")
        routing = layers.DynamicRouting(2, 3, share_weights=True)
        model = keras.Model([*inputs, mask], routing(inputs, mask=mask))
        padded = model([logits, poses, present])
        cut = routing([logits[:1, :3], poses[:1, :3]])
        whole = routing([logits[1:], poses[1:]])
        for got, first, second in zip(padded, cut, whole):
            self.assertAllClose(got[0], first[0], atol=1e-6)
            self.assertAllClose(got[1], second[0], atol=1e-6)

    def test_mask_argument(self):
        rng = np.random.default_rng(3)
        logits, poses = as_contract(rng.normal(size=(2, 6, 4)))
        mask = np.array([[1, 1, 1, 0, 0, 0], [1, 0, 1, 0, 1, 1]], bool)
        layer = layers.DynamicRouting(2, 3)
        masked = layer([logits, poses], mask=mask)
        garbage = [
            np.where(mask, logits, 100.0).astype("float32"),
            np.where(mask[..., None, None], poses, 100.0).astype("float32"),
        ]
        for got, want in zip(layer(garbage, mask=mask), masked):
            self.assertAllClose(got, want, atol=1e-6)

    def test_rejects_bad_arguments_and_shapes(self):
        with self.assertRaisesRegex(
            ValueError, "num_capsules.*Received: num_capsules=0"
        ):
            layers.DynamicRouting(0, 4)
        with self.assertRaisesRegex(ValueError, "num_iterations"):
            layers.DynamicRouting(2, 4, num_iterations=1.5)
        with self.assertRaisesRegex(ValueError, r"known number.*share_weights"):
            layers.DynamicRouting(2, 4).build(
                [(None, None), (None, None, 1, 8)]
            )
        with self.assertRaisesRegex(
            ValueError, r"\(batch, n_in, d_cov, d_in\)"
        ):
            layers.DynamicRouting(2, 4).build((None, 8))

    def test_gradients_reach_the_kernel(self):
        layer = layers.DynamicRouting(3, 4)
        inputs = as_contract(np.random.default_rng(4).normal(size=(2, 5, 3)))
        layer(inputs)

        def loss(logits, poses):
            return ops.sum(layer([logits, poses])[1] ** 2)

        _, _, gradient = loss_gradients(loss, inputs, [layer.kernel])
        self.assertGreater(float(np.max(np.abs(gradient))), 0.0)


class PrimaryCapsulesTest(TestCase):
    def test_groups_channels_into_squashed_capsules(self):
        x = np.random.default_rng(0).normal(size=(2, 9, 9, 3)).astype("float32")
        layer = layers.PrimaryCapsules(4, 5, kernel_size=3, strides=2)
        logits, capsules = layer(x)
        capsules = capsules[:, :, 0]
        features = numpy(layer.convolution(x))  # (2, 4, 4, 20)
        self.assertEqual(capsules.shape, (2, 4 * 4 * 4, 5))
        vectors = features.reshape(2, 4, 4, 4, 5)[0, 1, 2, 3]
        norm = np.linalg.norm(vectors)
        expected = norm**2 / (1 + norm**2) * vectors / norm
        index = (1 * 4 + 2) * 4 + 3  # row, column, type.
        self.assertAllClose(capsules[0, index], expected, atol=1e-5)
        self.assertLess(
            float(np.max(np.linalg.norm(numpy(capsules), axis=-1))), 1.0
        )
        self.assertAllClose(
            ops.sigmoid(logits), ops.norm(capsules, axis=-1), rtol=1e-5
        )

    def test_capsnet_shape(self):
        layer = layers.PrimaryCapsules(32, 8)
        self.assertEqual(
            layer.compute_output_shape((None, 20, 20, 256)),
            [(None, 1152), (None, 1152, 1, 8)],
        )
        self.assertEqual(
            layer.compute_output_shape((None, None, 20, 256)),
            [(None, None), (None, None, 1, 8)],
        )

    def test_rejects_bad_input(self):
        with self.assertRaisesRegex(ValueError, r"\(batch, H, W, C\).*channel"):
            layers.PrimaryCapsules(2, 3).build((None, 28, 28))
        with self.assertRaisesRegex(
            ValueError, "padding.*Received: padding='full'"
        ):
            layers.PrimaryCapsules(2, 3, padding="full")
        with self.assertRaisesRegex(
            ValueError, "convolution_algorithm.*Received: .*='fft'"
        ):
            layers.PrimaryCapsules(2, 3, convolution_algorithm="fft")
        spectral = layers.PrimaryCapsules(
            2, 3, convolution_algorithm="spectral"
        )
        with self.assertRaisesRegex(ValueError, r"known size.*None, 8, 2"):
            spectral.build((None, None, 8, 2))

    @parameterized.product(padding=["valid", "same"], mode=MODES)
    def test_spectral_convolution_equals_direct(self, padding, mode):
        x = np.random.default_rng(0).normal(size=(2, 11, 10, 3))
        arguments = dict(kernel_size=(5, 4), strides=2, padding=padding)
        direct = layers.PrimaryCapsules(
            4, 5, convolution_algorithm="direct", **arguments
        )
        spectral = layers.PrimaryCapsules(
            4, 5, convolution_algorithm="spectral", **arguments
        )
        direct.build(x.shape)
        spectral.build(x.shape)
        kernel, bias = direct.get_weights()
        bias = np.random.default_rng(1).normal(size=bias.shape)  # not 0.
        direct.set_weights([kernel, bias])
        spectral.set_weights([kernel, bias])
        x = x.astype("float32")
        want = keras.tree.flatten(run_in(direct, mode)(x))
        got = keras.tree.flatten(run_in(spectral, mode)(x))
        for result, expected in zip(got, want):
            self.assertAllClose(result, expected, rtol=1e-5, atol=1e-5)

    def test_spectral_convolution_under_mixed_precision(self):
        x = np.random.default_rng(1).uniform(size=(2, 9, 9, 3))
        direct = layers.PrimaryCapsules(
            2, 4, kernel_size=5, convolution_algorithm="direct"
        )
        spectral = layers.PrimaryCapsules(
            2,
            4,
            kernel_size=5,
            convolution_algorithm="spectral",
            dtype="mixed_float16",
        )
        direct.build(x.shape)
        spectral.build(x.shape)
        spectral.set_weights(direct.get_weights())
        _, result = spectral(x)
        self.assertDTypeEqual(result, "float16")
        # Half precision's rounding (eps 2^-10) of convolution sums over
        # 75 terms of unit scale.
        self.assertAllClose(result, direct(x)[1], rtol=1e-2, atol=1e-2)

    def test_auto_takes_spectral_where_it_saves_half_the_work(self):
        if BACKEND != "tensorflow":
            self.skipTest("Reads the ops of a TensorFlow graph.")
        tf = importlib.import_module("tensorflow")

        def convolution_ops(layer, shape):
            function = tf.function(layer).get_concrete_function(
                tf.TensorSpec(shape, "float32")
            )
            types = {op.type for op in function.graph.get_operations()}
            return "Conv2D" in types, "BatchMatMulV2" in types

        # CapsNet's PrimaryCaps has 3.5x fewer multiply-adds spectrally;
        # a 3x3 kernel has more.
        large = layers.PrimaryCapsules(32, 8)
        self.assertEqual(
            convolution_ops(large, (1, 20, 20, 256)), (False, True)
        )
        small = layers.PrimaryCapsules(2, 4, kernel_size=3)
        self.assertEqual(convolution_ops(small, (1, 20, 20, 8)), (True, False))
        # An image size known only when called: direct.
        self.assertEqual(
            convolution_ops(large, (1, None, None, 256)), (True, False)
        )


class CapsuleLengthTest(TestCase):
    def test_lengths(self):
        x = np.array([[[3.0, 4.0], [0.0, 0.0]]], "float32")
        self.assertAllClose(layers.CapsuleLength()(x), [[5.0, 0.0]], atol=1e-5)


class CapsuleMaskTest(TestCase):
    def setUp(self):
        self.capsules = np.array(
            [
                [[0.1, 0.0], [0.5, 0.5], [0.2, 0.0]],
                [[0.9, 0.0], [0.0, 0.1], [0.0, 0.2]],
            ],
            "float32",
        )

    def keep(self, rows):
        kept = np.zeros_like(self.capsules)
        for k, row in enumerate(rows):
            kept[k, row] = self.capsules[k, row]
        return kept

    def test_keeps_longest_without_labels_or_when_not_training(self):
        mask = layers.CapsuleMask()
        self.assertAllClose(mask(self.capsules), self.keep([1, 0]))
        labels = np.array([2, 2])
        self.assertAllClose(
            mask([self.capsules, labels], training=False), self.keep([1, 0])
        )

    def test_keeps_labelled_capsules_while_training(self):
        mask = layers.CapsuleMask()
        self.assertAllClose(
            mask([self.capsules, np.array([2, 1])], training=True),
            self.keep([2, 1]),
        )
        two_hot = np.array([[1, 0, 1], [0, 1, 1]], "float32")
        expected = self.capsules * two_hot[..., None]
        self.assertAllClose(
            mask([self.capsules, two_hot], training=True), expected
        )

    def test_always_use_labels(self):
        mask = layers.CapsuleMask(always_use_labels=True)
        self.assertAllClose(
            mask([self.capsules, np.array([0, 2])]), self.keep([0, 2])
        )
        restored = layers.CapsuleMask.from_config(mask.get_config())
        self.assertTrue(restored.always_use_labels)


if __name__ == "__main__":
    absltest.main()
