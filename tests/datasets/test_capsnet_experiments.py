"""The CapsNet experiments' pipelines: shapes, labels, augmentation."""

import os

import numpy as np
import tensorflow as tf

from keras_capsules import datasets


def first_batch(*args, **kwargs):
    return next(iter(datasets.load_experiment(*args, **kwargs)))


class CapsNetExperimentsTest(tf.test.TestCase):
    def test_procedural_train_batches_shift_and_reshuffle(self):
        data = datasets.load_experiment(
            "procedural_shapes", "train", 16, shift_pixels=2, size=64
        )
        first, second = [next(iter(data)) for _ in range(2)]
        self.assertEqual(first[0].shape, (16, 28, 28, 1))
        self.assertNotAllClose(first[0], second[0])  # A new epoch.
        totals = [float(tf.reduce_sum(batch[0])) for batch in data]
        self.assertLen(totals, 4)

    def test_test_batches_repeat(self):
        data = datasets.load_experiment("procedural_shapes", "test_novel", 8)
        first, second = [next(iter(data)) for _ in range(2)]
        self.assertAllEqual(first[0], second[0])

    def test_unknown_experiment(self):
        with self.assertRaisesRegex(ValueError, "Unknown experiment 'norb'"):
            datasets.experiment_info("norb")


class MnistExperimentsTest(tf.test.TestCase):
    def setUp(self):
        super().setUp()
        if not os.environ.get("TFDS_DATA_DIR"):
            self.skipTest("TFDS_DATA_DIR is not set: no prepared datasets.")

    def test_multi_mnist_has_two_digit_targets(self):
        images, targets = first_batch("multi_mnist", "test", 64, size=64)
        self.assertEqual(images.shape[1:], (36, 36, 1))
        self.assertAllEqual(np.sum(targets, axis=1), np.full(len(targets), 2))
        again, _ = first_batch("multi_mnist", "test", 64, size=64)
        self.assertAllEqual(images, again)

    def test_affine_mnist_splits(self):
        translated, labels = first_batch("affine_mnist", "test", 32, size=32)
        affine, same_labels = first_batch(
            "affine_mnist", "test_affine", 32, size=32
        )
        self.assertEqual(translated.shape, (32, 40, 40, 1))
        self.assertEqual(affine.shape, (32, 40, 40, 1))
        self.assertAllEqual(labels, same_labels)
        # The same digits, differently placed: similar ink, other pixels.
        self.assertAllClose(
            tf.reduce_sum(affine), tf.reduce_sum(translated), rtol=0.25
        )
        self.assertNotAllClose(affine, translated)


if __name__ == "__main__":
    tf.test.main()
