"""TFDS loading through the ordinary code path (TFDS_DATA_DIR offline)."""

import os

import numpy as np
import tensorflow as tf

from keras_capsules import datasets


class TfdsLoadersTest(tf.test.TestCase):
    def setUp(self):
        super().setUp()
        if not os.environ.get("TFDS_DATA_DIR"):
            self.skipTest("TFDS_DATA_DIR is not set: no prepared datasets.")

    def test_loads_mnist_slice(self):
        images, labels = datasets.load_image_arrays("mnist", "test[:64]")
        self.assertEqual(images.shape, (64, 28, 28, 1))
        self.assertEqual(images.dtype, np.float32)
        self.assertBetween(float(images.max()), 0.5, 1.0)
        self.assertEqual(labels.shape, (64,))
        self.assertTrue(set(labels.tolist()) <= set(range(10)))

    def test_streams_projected_batches_equal_to_arrays(self):
        images, labels = datasets.load_image_arrays("mnist", "test[:50]")
        projection = np.random.default_rng(0).normal(size=(784, 6))
        streamed = datasets.load_image_dataset(
            "mnist", "test[:50]", batch_size=16, projection=projection
        )
        features = np.concatenate([x for x, _ in streamed.as_numpy_iterator()])
        streamed_labels = np.concatenate(
            [y for _, y in streamed.as_numpy_iterator()]
        )
        self.assertEqual(features.shape, (50, 6))
        self.assertAllEqual(streamed_labels, labels)
        self.assertAllClose(
            features, images.reshape(50, -1) @ projection, rtol=1e-4, atol=1e-4
        )

    def test_projection_needs_flat_images(self):
        with self.assertRaisesRegex(ValueError, "flatten=True"):
            datasets.load_image_dataset(
                "mnist", "test[:4]", 2, flatten=False, projection=np.eye(784)
            )


if __name__ == "__main__":
    tf.test.main()
