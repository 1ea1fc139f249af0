"""Translations, affine maps and MultiMNIST overlays of image batches."""

import numpy as np
import tensorflow as tf

from keras_capsules.datasets import image_transforms


def bar_images(count=4):
    images = np.zeros((count, 28, 28, 1), np.float32)
    images[:, 10:18, 12:14] = 1.0
    return images


class ImageTransformsTest(tf.test.TestCase):
    def test_zero_shift_is_identity_and_shifts_keep_pixels(self):
        images = bar_images()
        same = image_transforms.random_translate(images, 28, 0, seed=(1, 2))
        self.assertAllEqual(same, images)
        moved = image_transforms.random_translate(images, 36, 4, seed=(1, 2))
        self.assertEqual(moved.shape, (4, 36, 36, 1))
        self.assertAllEqual(np.sum(moved, axis=(1, 2, 3)), np.full(4, 16.0))
        rows = np.nonzero(moved.numpy()[:, :, :, 0].sum(axis=2))
        self.assertGreaterEqual(rows[1].min(), 10)  # 14 - 4
        self.assertLessEqual(rows[1].max(), 25)  # 21 + 4

    def test_seeded_transforms_repeat(self):
        images = bar_images()
        first = image_transforms.random_affine(images, 40, seed=(3, 4))
        second = image_transforms.random_affine(images, 40, seed=(3, 4))
        self.assertAllEqual(first, second)

    def test_identity_affine_centres_the_image(self):
        images = bar_images()
        placed = image_transforms.random_affine(
            images, 40, 0.0, 0.0, (1.0, 1.0), 0.0, seed=(0, 0)
        )
        self.assertAllClose(placed[:, 6:34, 6:34], images, atol=1e-6)

    def test_rotation_by_the_largest_angle_turns_the_bar(self):
        images = bar_images(1)
        turned = image_transforms.random_affine(
            images, 28, 90.0, 0.0, (1.0, 1.0), 0.0, seed=(5, 5)
        ).numpy()[0, :, :, 0]
        self.assertAllClose(turned.sum(), 16.0, atol=0.5)
        self.assertNotAllClose(turned, images[0, :, :, 0])

    def test_overlay_pairs_have_two_different_classes(self):
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(64, 28, 28, 1)).astype("float32")
        labels = rng.integers(0, 10, 64)
        overlays, targets, first, second = image_transforms.overlay_pairs(
            images, labels, 10, 36, 4, (7, 8)
        )
        self.assertEqual(overlays.shape[1:], (36, 36, 1))
        self.assertAllEqual(np.sum(targets, axis=1), np.full(len(targets), 2.0))
        self.assertAllEqual(overlays, np.maximum(first, second))


if __name__ == "__main__":
    tf.test.main()
