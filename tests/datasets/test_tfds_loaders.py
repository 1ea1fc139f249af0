"""TFDS loading through the ordinary code path (TFDS_DATA_DIR offline)."""

import os

import numpy as np
import tensorflow as tf

from keras_capsules import datasets


class TfdsLoadersTest(tf.test.TestCase):
    def test_loads_mnist_slice(self):
        if not os.environ.get("TFDS_DATA_DIR"):
            self.skipTest("TFDS_DATA_DIR is not set: no prepared datasets.")
        images, labels = datasets.load_image_arrays("mnist", "test[:64]")
        self.assertEqual(images.shape, (64, 28, 28, 1))
        self.assertEqual(images.dtype, np.float32)
        self.assertBetween(float(images.max()), 0.5, 1.0)
        self.assertEqual(labels.shape, (64,))
        self.assertTrue(set(labels.tolist()) <= set(range(10)))


if __name__ == "__main__":
    tf.test.main()
