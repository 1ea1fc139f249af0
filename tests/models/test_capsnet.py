"""CapsNet: training reduces the loss, decoder masking, saving, errors."""

import importlib
import os
import tempfile

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import losses, models
from tests.every_backend import BACKEND, TestCase, numpy

_SMALL = models.CapsNetConfig(
    conv_filters=8,
    conv_kernel_size=3,
    primary_capsule_types=4,
    primary_kernel_size=3,
    capsule_dim=4,
    decoder_units=(16,),
)


def toy_data(count=48, seed=0):
    """Two classes: a bright square at the top or at the bottom."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, count)
    images = rng.uniform(0, 0.1, (count, 12, 12, 1)).astype("float32")
    for k, label in enumerate(labels):
        rows = slice(1, 5) if label == 0 else slice(7, 11)
        images[k, rows, 4:8] = 1.0
    return images, labels


class CapsNetTest(TestCase):
    def test_paper_sizes(self):
        model = models.capsnet((28, 28, 1), 10)
        self.assertEqual(
            model.primary_capsules.compute_output_shape((None, 20, 20, 256)),
            [(None, 1152), (None, 1152, 1, 8)],
        )
        self.assertEqual(model.class_capsules.kernel.shape, (1152, 10, 8, 16))
        self.assertEqual(model(np.zeros((2, 28, 28, 1))).shape, (2, 10))
        # 8.2M parameters: conv 20,992 + primary 5,308,672 + routing
        # 1,474,560 + decoder 1,411,344 (Sabour et al. sec. 4).
        self.assertEqual(model.count_params(), 8_215_568)

    def test_fit_learns_and_reports_losses(self):
        keras.utils.set_random_seed(0)
        images, labels = toy_data()
        model = models.capsnet((12, 12, 1), 2, _SMALL)
        model.compile(
            optimizer=keras.optimizers.Adam(1e-2), metrics=["accuracy"]
        )
        before = model.evaluate(images, labels, return_dict=True, verbose=0)
        history = model.fit(images, labels, epochs=8, batch_size=16, verbose=0)
        after = model.evaluate(images, labels, return_dict=True, verbose=0)
        self.assertLess(after["loss"], before["loss"])
        self.assertGreaterEqual(after["accuracy"], 0.9)
        self.assertIn("reconstruction_loss", history.history)
        self.assertIsInstance(model.loss, losses.MarginLoss)

    def test_reconstruct_uses_labels_or_longest(self):
        model = models.capsnet((12, 12, 1), 3, _SMALL)
        images, _ = toy_data(4)
        capsules = model.encode(images)
        longest = np.argmax(np.linalg.norm(numpy(capsules), axis=-1), axis=-1)
        self.assertAllClose(
            model.reconstruct(capsules), model.reconstruct(capsules, longest)
        )
        self.assertEqual(
            model.reconstruct(capsules, [0, 1, 2, 0]).shape, (4, 12, 12, 1)
        )

    def test_keras_round_trip_keeps_outputs_and_compilation(self):
        images, labels = toy_data(16)
        model = models.capsnet((12, 12, 1), 2, _SMALL)
        model.compile(optimizer="adam", metrics=["accuracy"])
        model.fit(images, labels, epochs=1, verbose=0)
        path = os.path.join(tempfile.mkdtemp(), "capsnet.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        self.assertAllClose(restored(images), model(images), atol=1e-6)
        self.assertEqual(restored.get_config(), model.get_config())
        self.assertAllClose(
            restored.evaluate(images, labels, verbose=0),
            model.evaluate(images, labels, verbose=0),
            atol=1e-5,
        )

    def test_primary_convolution_algorithms_train_alike(self):
        images, labels = toy_data(16)
        trained = []
        for algorithm in ("direct", "spectral"):
            keras.utils.set_random_seed(0)
            model = models.capsnet(
                (12, 12, 1),
                2,
                _SMALL.replace(convolution_algorithm=algorithm),
            )
            model.compile(optimizer=keras.optimizers.SGD(0.1))
            model.fit(images, labels, epochs=2, batch_size=8, verbose=0)
            trained.append(model)
        direct, spectral = trained
        self.assertEqual(
            spectral.get_config()["config"]["convolution_algorithm"], "spectral"
        )
        self.assertEqual(
            spectral.primary_capsules.convolution_algorithm, "spectral"
        )
        # The same weights after 4 steps, to float32 rounding.
        for got, want in zip(spectral.get_weights(), direct.get_weights()):
            self.assertAllClose(got, want, rtol=1e-4, atol=1e-5)
        self.assertAllClose(spectral(images), direct(images), atol=1e-5)

    def test_mixed_float16_training_stays_finite(self):
        images, labels = toy_data(16)
        policy = keras.mixed_precision.dtype_policy()
        keras.mixed_precision.set_dtype_policy("mixed_float16")
        try:
            model = models.capsnet((12, 12, 1), 2, _SMALL)
            model.compile(optimizer="adam")
            history = model.fit(images, labels, epochs=2, verbose=0)
            lengths = model(images)
        finally:
            keras.mixed_precision.set_dtype_policy(policy)
        self.assertDTypeEqual(lengths, "float16")
        self.assertTrue(np.all(np.isfinite(history.history["loss"])))
        self.assertEqual(model.class_capsules.kernel.dtype, "float32")

    def test_trains_under_a_mirrored_strategy(self):
        if BACKEND != "tensorflow":
            self.skipTest("tf.distribute is TensorFlow's.")
        tf = importlib.import_module("tensorflow")
        images, labels = toy_data(32)
        with tf.distribute.MirroredStrategy().scope():
            model = models.capsnet((12, 12, 1), 2, _SMALL)
            model.compile(optimizer="adam", metrics=["accuracy"])
        logs = model.fit(images, labels, batch_size=8, verbose=0).history
        self.assertTrue(np.isfinite(logs["loss"][0]))
        self.assertGreater(logs["reconstruction_loss"][0], 0.0)

    def test_rejects_bad_image_shape(self):
        with self.assertRaisesRegex(ValueError, r"\(height, width, channels\)"):
            models.capsnet((28, 28), 10)


if __name__ == "__main__":
    absltest.main()
