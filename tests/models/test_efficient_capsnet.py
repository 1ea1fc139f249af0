"""Efficient-CapsNet: the paper's weights, learning, saving, the backbone
under any routing head, and the training script (on every Keras
backend)."""

import os
import tempfile

import keras
import numpy as np
from absl.testing import absltest

from examples import train_capsnet
from keras_capsules import layers, models
from tests.every_backend import TestCase, numpy
from tests.examples.script_runs import run_in_process
from tests.models.test_capsule_classifier import halves

# A model small enough for a few seconds of training on 12x12 images:
# the stem's valid convolutions (strides 2 last) give 1x1 maps of 16
# channels, and a kernel 1 depthwise convolution 4 capsules of 4.
_TINY = {
    "conv_filters": (16, 16, 16, 16),
    "primary_kernel_size": 1,
    "primary_capsule_dim": 4,
    "capsule_dim": 4,
    "decoder_units": (16,),
}


class EfficientCapsNetTest(TestCase):
    def test_has_the_papers_weights(self):
        model = models.efficient_capsnet()
        sizes = {w.path.split("/")[1]: 0 for w in model.trainable_weights}
        for w in model.trainable_weights:
            sizes[w.path.split("/")[1]] += int(np.prod(w.shape))
        # 161,824 without the decoder, as the authors' model summary.
        self.assertEqual(
            sizes["stem"] + sizes["primary_capsules"] + sizes["class_capsules"],
            161_824,
        )
        self.assertEqual(sizes["class_capsules"], 16 * 10 * 8 * 16 + 160)

    def test_learns_an_easy_task_and_saves(self):
        keras.utils.set_random_seed(0)
        # 96 steps: the batch normalisation's moving averages move 1% a
        # step (the authors' momentum); 32 steps leave them near their
        # start, and evaluation then fails.
        images, labels = halves(count=256)
        model = models.efficient_capsnet(
            (12, 12, 1), 2, models.EfficientCapsNetConfig(**_TINY)
        )
        model.compile(
            optimizer=keras.optimizers.Adam(3e-3),
            metrics=["sparse_categorical_accuracy"],
        )
        model.fit(images, labels, batch_size=16, epochs=6, verbose=0)
        test_images, test_labels = halves(seed=1)
        results = model.evaluate(
            test_images, test_labels, verbose=0, return_dict=True
        )
        self.assertGreater(results["sparse_categorical_accuracy"], 0.9)
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
        self.assertIsInstance(restored, models.EfficientCapsNet)
        self.assertAllClose(
            restored(test_images), model(test_images), atol=1e-5, rtol=1e-5
        )

    def test_primary_capsules_are_squashed_exponentially(self):
        layer = layers.EfficientPrimaryCapsules(capsule_dim=4, kernel_size=3)
        features = np.random.default_rng(0).normal(size=(2, 5, 5, 8))
        logits, poses = layer(features)
        raw = numpy(layer.convolution(features)).reshape(2, -1, 4)  # s_n
        norms = np.linalg.norm(raw, axis=-1)
        expected = (1 - np.exp(-norms))[..., None] * raw / norms[..., None]
        self.assertAllClose(numpy(poses)[:, :, 0], expected, atol=1e-5)
        self.assertAllClose(
            1 / (1 + np.exp(-numpy(logits))), 1 - np.exp(-norms), atol=1e-5
        )

    def test_backbone_takes_any_routing_head(self):
        backbone = models.efficient_capsnet_backbone()
        model = models.capsule_classifier(
            (28, 28, 1), 10, routing="variational_bayes", backbone=backbone
        )
        self.assertEqual(tuple(model(np.zeros((2, 28, 28, 1))).shape), (2, 10))

    def test_refuses_bad_settings(self):
        with self.assertRaisesRegex(ValueError, "4 `conv_filters`"):
            models.EfficientCapsNetConfig(conv_filters=(8, 8))
        with self.assertRaisesRegex(ValueError, "capsule_dim=3"):
            layers.EfficientPrimaryCapsules(3)(np.zeros((1, 9, 9, 8)))

    def test_training_script_trains_it(self):
        results = run_in_process(
            train_capsnet,
            variant="efficient_capsnet",
            dataset="procedural_shapes",
            train_size=64,
            test_size=32,
            batch_size=16,
            preset="paper:conv_filters=8/8/8/8,decoder_units=16",
            model_dir=tempfile.mkdtemp(),
            jit_compile=keras.backend.backend() != "torch",
        )
        self.assertEqual(results["config"]["conv_filters"], [8, 8, 8, 8])
        self.assertIn("accuracy", results["evaluation"]["test"])


if __name__ == "__main__":
    absltest.main()
