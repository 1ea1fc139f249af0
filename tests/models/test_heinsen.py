"""Heinsen's image and sequence models, and the small layers they use."""

import importlib
import os
import tempfile

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import layers, models
from tests.every_backend import BACKEND, TestCase, numpy


class CoordinateChannelsTest(TestCase):
    def test_rows_then_columns_from_minus_one_to_one(self):
        out = np.asarray(layers.CoordinateChannels()(np.zeros((1, 3, 5, 1))))
        self.assertAllClose(out[0, :, 0, 1], [-1.0, 0.0, 1.0])
        self.assertAllClose(out[0, 0, :, 2], np.linspace(-1, 1, 5))
        self.assertAllClose(
            out[0, :, :, 1],
            np.repeat(np.linspace(-1, 1, 3)[:, None], 5, axis=1),
        )


class PresenceScoresTest(TestCase):
    def test_logits_and_mask(self):
        layer = layers.PresenceScores(repeats=2)
        weights = np.array([[1.0, 0.5, 0.25, 0.0]], "float32")
        scores = np.asarray(layer(weights))
        self.assertAllClose(
            scores[0, 2:6], [0.0, 0.0, np.log(1 / 3), np.log(1 / 3)], atol=1e-5
        )
        self.assertGreater(scores[0, 0], 13.0)
        self.assertTrue(np.all(np.isfinite(scores)))
        mask = layer.compute_mask(np.asarray(weights))
        self.assertAllEqual(mask, [[True] * 6 + [False] * 2])


class HeinsenImageTest(TestCase):
    def test_paper_model_has_the_paper_size(self):
        model = models.heinsen_image((96, 96, 2), num_classes=5)
        # Paper: "approximately 272,000" parameters.
        self.assertBetween(model.count_params(), 265_000, 280_000)

    def test_author_initialisation(self):
        # glassroom/heinsen_routing: Kaiming-normal 3x3 kernels (fan-in,
        # gain sqrt 2), PyTorch's default uniform(+-1/sqrt(fan_in)) for
        # their biases and for both 1x1 convolutions.
        keras.utils.set_random_seed(0)
        model = models.heinsen_image((28, 28, 1), 10)
        first = model.get_layer("conv1")
        fan_in = 3 * 3 * 3  # the image and two coordinate channels
        kernel = numpy(first.kernel)
        self.assertAllClose(kernel.std(), np.sqrt(2 / fan_in), rtol=0.1)
        # Not truncated: values beyond two standard deviations occur.
        self.assertGreater(np.abs(kernel).max(), 2.2 * np.sqrt(2 / fan_in))
        for name in ("conv1", "conv4"):
            bias = numpy(model.get_layer(name).bias)
            limit = (9 * (3 if name == "conv1" else 64)) ** -0.5
            self.assertLessEqual(np.abs(bias).max(), limit)
            self.assertGreater(np.abs(bias).max(), 0.5 * limit)
        deep = numpy(model.get_layer("conv4").kernel)
        self.assertAllClose(deep.std(), np.sqrt(2 / (9 * 64)), rtol=0.05)
        for name in ("score_conv", "pose_conv"):
            layer = model.get_layer(name)
            for weights in (numpy(layer.kernel), numpy(layer.bias)):
                self.assertLessEqual(np.abs(weights).max(), 64**-0.5)
                self.assertGreater(np.abs(weights).max(), 0.9 * 64**-0.5)
        self.assertEqual(model.get_layer("part_routing").epsilon, 1e-5)
        self.assertEqual(model.get_layer("class_routing").epsilon, 1e-5)

    def test_keras_initialisation_is_an_option(self):
        keras.utils.set_random_seed(0)
        model = models.heinsen_image((28, 28, 1), 10, initialization="keras")
        first = model.get_layer("conv1")
        glorot = np.sqrt(6 / (27 + 9 * 64))
        self.assertLessEqual(np.abs(numpy(first.kernel)).max(), glorot)
        self.assertAllEqual(numpy(first.bias), np.zeros(64))
        with self.assertRaisesRegex(ValueError, "initialization.*'torch'"):
            models.heinsen_image((28, 28, 1), 10, initialization="torch")

    def test_valid_padding_gives_the_authors_capsule_count(self):
        # 96 -> 94 -> 46 -> 44 -> 21 -> 19 -> 9: 9 x 9 x 64 capsules.
        model = models.heinsen_image(
            (96, 96, 2), 5, filters=8, num_parts=64, padding="valid"
        )
        self.assertEqual(model.get_layer("input_scores").output.shape[1], 5184)
        with self.assertRaisesRegex(ValueError, "padding"):
            models.heinsen_image((96, 96, 2), 5, padding="reflect")

    def test_two_image_sizes_without_rebuilding(self):
        model = models.heinsen_image(
            (None, None, 1), num_classes=3, filters=8, num_parts=4
        )
        count = model.count_params()
        for size in ((20, 20), (33, 17)):
            scores = model(np.zeros((2, *size, 1), "float32"))
            self.assertEqual(scores.shape, (2, 3))
            self.assertTrue(np.all(np.isfinite(numpy(scores))))
        self.assertEqual(model.count_params(), count)

    def test_learns_a_toy_task(self):
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(64, 12, 12, 1)).astype("float32") * 0.1
        labels = rng.integers(0, 2, 64)
        images[labels == 1, :6] += 1.0  # Class 1: bright upper half.
        # Seeded: otherwise the weights depend on what ran before.
        keras.utils.set_random_seed(0)
        model = models.heinsen_image((12, 12, 1), 2, filters=8, num_parts=4)
        model.compile(
            optimizer=keras.optimizers.Adam(3e-3),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        model.fit(images, labels, batch_size=16, epochs=15, verbose=0)
        _, accuracy = model.evaluate(images, labels, verbose=0)
        self.assertGreater(accuracy, 0.9)


class HeinsenSequenceTest(TestCase):
    def test_two_lengths_without_rebuilding(self):
        model = models.heinsen_sequence(
            6, 5, num_depths=3, capsule_size=8, num_capsules=4
        )
        count = model.count_params()
        for length in (4, 11):
            scores = model(
                [
                    np.ones((2, length, 3, 6), "float32"),
                    np.ones((2, length), "float32"),
                ]
            )
            self.assertEqual(scores.shape, (2, 5))
        self.assertEqual(model.count_params(), count)

    def test_padding_changes_nothing(self):
        model = models.heinsen_sequence(6, 2, capsule_size=8, num_capsules=4)
        rng = np.random.default_rng(1)
        embeddings = rng.normal(size=(2, 5, 6)).astype("float32")
        padded = np.concatenate(
            [embeddings, rng.normal(size=(2, 3, 6)).astype("float32")], 1
        )
        presence = np.concatenate([np.ones((2, 5)), np.zeros((2, 3))], 1)
        self.assertAllClose(
            model([embeddings, np.ones((2, 5), "float32")]),
            model([padded, presence.astype("float32")]),
            atol=1e-5,
        )

    def test_token_model_saves_and_loads(self):
        if BACKEND != "tensorflow":
            self.skipTest("MixupClassifier's training step is TensorFlow's.")
        recipes = importlib.import_module("keras_capsules.recipes")
        embedder = models.token_embedder(30, 6)
        classifier = models.heinsen_sequence(
            6, 2, capsule_size=8, num_capsules=4
        )
        model = recipes.MixupClassifier(classifier, embedder, alpha=0.2)
        model.compile(
            optimizer=recipes.one_cycle_radam(10),
            loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        )
        tokens = np.array([[3, 4, 5, 0], [7, 0, 0, 0]], "int32")
        model.fit(tokens, np.eye(2, dtype="float32"), epochs=1, verbose=0)
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        self.assertAllClose(restored(tokens), model(tokens))
        # Padding (id 0) changes nothing.
        self.assertAllClose(model(tokens[:, :3]), model(tokens), atol=1e-5)


if __name__ == "__main__":
    absltest.main()
