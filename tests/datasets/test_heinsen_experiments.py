"""Heinsen's image datasets: smallNORB records, pad-and-crop, pipelines."""

import numpy as np
import tensorflow as tf

from keras_capsules.datasets import heinsen_experiments


class SmallNorbTest(tf.test.TestCase):
    def test_stereo_pair_becomes_two_channels(self):
        left = np.full((96, 96, 1), 255, np.uint8)
        right = np.zeros((96, 96, 1), np.uint8)
        image, label = heinsen_experiments.smallnorb_example(
            {"image": left, "image2": right, "label_category": np.int64(3)}
        )
        self.assertEqual(image.shape, (96, 96, 2))
        self.assertAllClose(image[..., 0], np.ones((96, 96)))
        self.assertAllClose(image[..., 1], np.zeros((96, 96)))
        self.assertEqual(int(label), 3)

    def test_info(self):
        shape, classes, splits, pad = heinsen_experiments.dataset_info(
            "smallnorb"
        )
        self.assertEqual(
            (shape, classes, splits, pad), ((96, 96, 2), 5, ("test",), 16)
        )
        with self.assertRaisesRegex(ValueError, "Unknown dataset"):
            heinsen_experiments.dataset_info("cifar")


class PadAndCropTest(tf.test.TestCase):
    def test_crops_are_shifted_windows_of_the_padded_image(self):
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(6, 10, 12, 2)).astype("float32")
        cropped = heinsen_experiments.pad_and_crop(images, 3, seed=(1, 2))
        self.assertEqual(cropped.shape, images.shape)
        padded = np.pad(images, ((0, 0), (3, 3), (3, 3), (0, 0)))
        for k in range(6):
            matches = [
                (r, c)
                for r in range(7)
                for c in range(7)
                if np.array_equal(padded[k, r : r + 10, c : c + 12], cropped[k])
            ]
            self.assertNotEmpty(matches)


class PipelineTest(tf.test.TestCase):
    def test_procedural_batches_have_one_hot_labels(self):
        data = heinsen_experiments.load_heinsen_images(
            "procedural_shapes", "test", batch_size=8, size=16
        )
        images, labels = next(iter(data))
        self.assertEqual(images.shape, (8, 28, 28, 1))
        self.assertAllClose(np.sum(labels, -1), np.ones(8))


if __name__ == "__main__":
    tf.test.main()
