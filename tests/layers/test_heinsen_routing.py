"""HeinsenRouting: votes per mode, routing, masks, symmetry, initialisation."""

import keras
import numpy as np
from absl.testing import absltest
from keras import ops

from keras_capsules import layers
from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, loss_gradients, numpy
from tests.ops.test_heinsen_routing import reference_batch


def random_inputs(seed, batch=2, n_in=6, d_cov=2, d_in=3):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(batch, n_in)).astype("float32")
    capsules = rng.normal(size=(batch, n_in, d_cov, d_in)).astype("float32")
    return scores, capsules


def randomise_weights(layer, seed):
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))


class VotesTest(TestCase):
    def test_fixed_inputs_use_a_kernel_and_bias_per_pair(self):
        scores, capsules = random_inputs(0)
        layer = layers.HeinsenRouting(4, 5)
        layer([scores, capsules])
        randomise_weights(layer, 1)
        expected = np.einsum(
            "bicd,ijdh->bijch", capsules, numpy(layer.kernel)
        ) + numpy(layer.bias)
        self.assertEqual(layer.kernel.shape, (6, 4, 3, 5))
        self.assertAllClose(layer.votes(capsules), expected, atol=1e-5)

    def test_variable_inputs_share_the_kernel_across_inputs(self):
        scores, capsules = random_inputs(0)
        layer = layers.HeinsenRouting(4, 5, share_weights=True)
        layer([scores, capsules])
        randomise_weights(layer, 1)
        expected = np.einsum(
            "bicd,jdh->bijch", capsules, numpy(layer.kernel)
        ) + numpy(layer.bias)
        self.assertEqual(layer.kernel.shape, (4, 3, 5))
        self.assertEqual(layer.beta_use.shape, (4,))
        self.assertAllClose(layer.votes(capsules), expected, atol=1e-5)

    def test_variable_outputs_add_the_anchor_of_each_output(self):
        scores, capsules = random_inputs(0)
        layer = layers.HeinsenRouting(None, 5)
        layer([scores, capsules])
        randomise_weights(layer, 1)
        transformed = np.einsum("bicd,dh->bich", capsules, numpy(layer.kernel))
        anchors = np.einsum(
            "bjcd,dh->bjch", capsules, numpy(layer.anchor_kernel)
        )
        expected = (
            transformed[:, :, None] + anchors[:, None] + numpy(layer.bias)
        )
        self.assertEqual(layer.kernel.shape, (3, 5))
        self.assertAllClose(layer.votes(capsules), expected, atol=1e-5)


class RoutingTest(TestCase):
    def test_outputs_are_algorithm_1_on_the_votes(self):
        scores, capsules = random_inputs(2)
        for kwargs in (
            {"num_capsules": 3},
            {"num_capsules": 3, "share_weights": True},
            {"num_capsules": 3, "tie_betas": True},
        ):
            layer = layers.HeinsenRouting(capsule_dim=2, **kwargs)
            layer([scores, capsules])
            randomise_weights(layer, 3)
            betas = [
                np.broadcast_to(numpy(weight), (6, 3)).astype("float64")
                for weight in (
                    layer.beta_use,
                    layer.beta_use if layer.tie_betas else layer.beta_ign,
                )
            ]
            votes = numpy(layer.votes(capsules)).astype("float64")
            expected = reference_batch(
                scores.astype("float64"), votes, *betas, iterations=3
            )
            outputs = layer([scores, capsules])
            for output, reference in zip(outputs, expected):
                self.assertAllClose(output, reference, rtol=1e-3, atol=1e-4)

    def test_tied_betas_are_one_weight(self):
        layer = layers.HeinsenRouting(3, 2, tie_betas=True)
        layer(list(random_inputs(0)))
        names = sorted(w.path.split("/")[-1] for w in layer.weights)
        self.assertEqual(names, ["beta_use", "bias", "kernel"])

    def test_paper_initialisation(self):
        d_in = 8
        layer = layers.HeinsenRouting(64, 4)
        layer([np.zeros((1, 64)), np.zeros((1, 64, 4, d_in))])
        self.assertAllClose(np.std(numpy(layer.kernel)), 1.0 / d_in, rtol=0.05)
        self.assertAllEqual(numpy(layer.bias), np.zeros(layer.bias.shape))
        self.assertAllEqual(numpy(layer.beta_use), np.zeros((64, 64)))
        self.assertAllEqual(numpy(layer.beta_ign), np.zeros((64, 64)))


class VariableCountsTest(TestCase):
    def test_variable_inputs_take_any_count(self):
        layer = layers.HeinsenRouting(3, 2, share_weights=True)
        for n_in in (4, 9):
            scores, capsules = random_inputs(n_in, n_in=n_in)
            _, means = layer([scores, capsules])
            self.assertEqual(means.shape, (2, 3, 2, 2))

    def test_padded_inputs_change_no_output(self):
        scores, capsules = random_inputs(4, n_in=5)
        rng = np.random.default_rng(5)
        padded_scores = np.concatenate(
            [scores, rng.normal(size=(2, 3)).astype("float32")], axis=1
        )
        padded_capsules = np.concatenate(
            [capsules, rng.normal(size=(2, 3, 2, 3)).astype("float32")],
            axis=1,
        )
        mask = np.arange(8)[None, :].repeat(2, axis=0) < 5
        for num_capsules in (3, None):
            layer = layers.HeinsenRouting(num_capsules, 2, share_weights=True)
            layer([scores, capsules])
            randomise_weights(layer, 6)
            unpadded = layer([scores, capsules])
            padded = layer([padded_scores, padded_capsules], mask=mask)
            for short, long in zip(unpadded, padded):
                self.assertAllClose(
                    short,
                    long[:, : short.shape[1]] if num_capsules is None else long,
                    rtol=1e-5,
                    atol=1e-5,
                )

    def test_variable_outputs_differ_at_initialisation(self):
        scores, capsules = random_inputs(7, n_in=5)
        layer = layers.HeinsenRouting(None, 2)
        output_scores, means = layer([scores, capsules])
        self.assertEqual(means.shape, (2, 5, 2, 2))
        means = numpy(means).reshape(2, 5, -1)
        for b in range(2):
            distances = np.linalg.norm(
                means[b, :, None] - means[b, None], axis=-1
            )
            off_diagonal = distances[~np.eye(5, dtype=bool)]
            self.assertGreater(off_diagonal.min(), 1e-3)

    def test_variable_outputs_pass_the_mask_on(self):
        scores = keras.Input((None,))
        capsules = keras.Input((None, 2, 3))
        mask = keras.Input((None,), dtype="bool")
        layer = layers.HeinsenRouting(None, 2)
        outputs = layer([scores, capsules], mask=mask)
        mask_value = np.array([[True, True, False]])
        computed = layer.compute_mask(
            None, [np.asarray(mask_value), np.asarray(mask_value)]
        )
        self.assertLen(computed, 2)
        self.assertAllEqual(computed[0], mask_value)
        self.assertLen(outputs, 2)

    def test_masked_model_in_the_functional_api(self):
        scores = keras.Input((None,))
        capsules = keras.Input((None, 2, 3))
        mask = keras.Input((None,), dtype="bool")
        outputs = layers.HeinsenRouting(3, 2, share_weights=True)(
            [scores, capsules], mask=mask
        )
        model = keras.Model([scores, capsules, mask], outputs[1])
        s, c = random_inputs(8, n_in=4)
        full = model([s, c, np.ones((2, 4), bool)])
        cut = model([s, c, np.array([[True] * 3 + [False]] * 2)])
        only_three = model([s[:, :3], c[:, :3], np.ones((2, 3), bool)])
        self.assertAllClose(cut, only_three, atol=1e-5)
        self.assertNotAllClose(full, cut)


class HardPointsTest(TestCase):
    def test_all_inputs_but_one_masked_have_finite_gradients(self):
        scores, capsules = random_inputs(9)
        mask = np.zeros((2, 6), bool)
        mask[:, 0] = True
        layer = layers.HeinsenRouting(3, 2, share_weights=True)
        layer([scores, capsules], mask=mask)

        def loss(capsules):
            outputs = layer([scores, capsules], mask=mask)
            return sum(ops.sum(o) for o in outputs)

        gradients = loss_gradients(loss, [capsules], layer.trainable_weights)
        for gradient in gradients:
            self.assertTrue(np.all(np.isfinite(gradient)))

    def test_one_iteration(self):
        scores, capsules = random_inputs(10)
        layer = layers.HeinsenRouting(3, 2, num_iterations=1)
        output_scores, _ = layer([scores, capsules])
        # With R = 1/n_out and zero betas the output scores are 0.
        self.assertAllClose(output_scores, np.zeros((2, 3)))


class ErrorsTest(TestCase):
    def test_unknown_input_count_needs_shared_weights(self):
        with self.assertRaisesRegex(ValueError, "share_weights=True"):
            layers.HeinsenRouting(3, 2)(
                [keras.Input((None,)), keras.Input((None, 2, 3))]
            )

    def test_one_input_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"expects `\[logits, poses\]`"):
            layers.HeinsenRouting(3, 2)(np.zeros((2, 6, 2, 3)))

    def test_non_positive_sizes_are_refused(self):
        with self.assertRaisesRegex(ValueError, "capsule_dim"):
            layers.HeinsenRouting(3, 0)

    def test_epsilon_reaches_the_op_and_the_config(self):
        scores, capsules = random_inputs(12)
        default = layers.HeinsenRouting(3, 2)
        self.assertEqual(default.epsilon, 1e-5)  # the author's code
        for share_weights in (False, True):
            layer = layers.HeinsenRouting(
                3, 2, share_weights=share_weights, epsilon=0.1
            )
            outputs = layer([scores, capsules])
            direct = capsule_ops.heinsen_routing(
                scores,
                layer.votes(capsules),
                layer.beta_use,
                layer.beta_ign,
                epsilon=0.1,
            )
            for a, b in zip(outputs, direct):
                self.assertAllClose(a, b, rtol=1e-4, atol=1e-5)
            restored = layers.HeinsenRouting.from_config(layer.get_config())
            self.assertEqual(restored.epsilon, 0.1)
        with self.assertRaisesRegex(ValueError, "epsilon"):
            layers.HeinsenRouting(3, 2, epsilon=0.0)

    def test_layer_uses_the_op(self):
        # The layer adds no math of its own: same result as the op.
        scores, capsules = random_inputs(11)
        layer = layers.HeinsenRouting(3, 2)
        outputs = layer([scores, capsules])
        direct = capsule_ops.heinsen_routing(
            scores, layer.votes(capsules), layer.beta_use, layer.beta_ign
        )
        for a, b in zip(outputs, direct):
            self.assertAllClose(a, b)


if __name__ == "__main__":
    absltest.main()
