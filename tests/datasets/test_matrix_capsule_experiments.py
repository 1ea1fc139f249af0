"""Matrix-capsule datasets: smallNORB preparation and viewpoint splits on
records the test makes (smallNORB is not available offline)."""

from unittest import mock

import numpy as np
import tensorflow as tf

from keras_capsules.datasets import matrix_capsule_experiments as experiments
from keras_capsules.datasets import matrix_capsule_names


def records(count=36):
    rng = np.random.default_rng(0)
    return {
        "image": rng.integers(0, 256, (count, 96, 96, 1)).astype(np.uint8),
        "label_category": np.arange(count, dtype=np.int64) % 5,
        "label_azimuth": np.arange(count, dtype=np.int64) % 18,
        "label_elevation": np.arange(count, dtype=np.int64) % 9,
    }


class SmallNorbPreparationTest(tf.test.TestCase):
    def test_images_are_downsampled_and_standardised(self):
        image, label = experiments.standardize_smallnorb(
            {k: v[3] for k, v in records().items()}
        )
        self.assertEqual(image.shape, (48, 48, 1))
        self.assertNear(float(tf.reduce_mean(image)), 0.0, 1e-5)
        self.assertNear(float(tf.math.reduce_std(image)), 1.0, 1e-3)
        self.assertEqual(int(label), 3)

    def test_training_crops_are_jittered_windows(self):
        image = tf.random.normal((48, 48, 1), seed=1)
        crop, _ = experiments.random_crop_and_jitter(image, 0, seed=(3, 0))
        self.assertEqual(crop.shape, (32, 32, 1))
        again, _ = experiments.random_crop_and_jitter(image, 0, seed=(3, 0))
        self.assertAllEqual(crop, again)
        centre, _ = experiments.centre_crop(image, 0)
        self.assertAllEqual(centre, image[8:40, 8:40])

    def test_each_image_of_a_batch_gets_its_own_crop(self):
        image = tf.random.normal((48, 48, 1), seed=1)
        images = tf.stack([image] * 4)
        crops, labels = experiments.random_crops_and_jitter(
            images, tf.range(4), tf.constant([5, 6])
        )
        self.assertEqual(crops.shape, (4, 32, 32, 1))
        self.assertAllEqual(labels, tf.range(4))
        self.assertNotAllClose(crops[0], crops[1])
        again, _ = experiments.random_crops_and_jitter(
            images, tf.range(4), tf.constant([5, 6])
        )
        self.assertAllEqual(crops, again)

    def test_multi_crop_covers_a_grid_of_windows(self):
        images = tf.reshape(
            tf.range(2 * 48 * 48, dtype=tf.float32), (2, 48, 48, 1)
        )
        crops = experiments.test_crops(images, stride=8)
        self.assertEqual(crops.shape, (9, 2, 32, 32, 1))
        self.assertAllEqual(crops[4], images[:, 8:40, 8:40])
        self.assertAllEqual(crops[8], images[:, 16:, 16:])

    def test_viewpoint_splits_partition_the_records(self):
        data = tf.data.Dataset.from_tensor_slices(records())
        for viewpoints, key, familiar in (
            ("azimuth", "label_azimuth", {15, 16, 17, 0, 1, 2}),
            ("elevation", "label_elevation", {0, 1, 2}),
        ):
            kept = {
                split: [
                    int(r[key])
                    for r in data.filter(
                        experiments._viewpoint_filter(
                            viewpoints, split, split != "test_novel"
                        )
                    )
                ]
                for split in ("train", "test_novel")
            }
            self.assertEqual(set(kept["train"]), familiar)
            self.assertEmpty(set(kept["test_novel"]) & familiar)
            self.assertLen(kept["train"] + kept["test_novel"], 36)


class PipelineTest(tf.test.TestCase):
    def test_procedural_batches(self):
        data = experiments.load_matrix_capsule_data(
            "procedural_shapes", "test_novel", batch_size=8, size=16
        )
        images, labels = next(iter(data))
        self.assertEqual(images.shape, (8, 28, 28, 1))
        self.assertEqual(labels.shape, (8,))

    def test_smallnorb_epochs_repeat_their_order_and_crops(self):
        fake = tf.data.Dataset.from_tensor_slices(records(20))
        with mock.patch.object(experiments.tfds, "load", return_value=fake):
            epoch_batches = experiments.load_matrix_capsule_epochs(
                "smallnorb", 8, "azimuth", seed=2
            )
        first, again, second = (
            [tuple(np.asarray(t) for t in batch) for batch in epoch_batches(e)]
            for e in (0, 0, 1)
        )
        # 20 records, 6 of every 18 azimuths familiar: 8 kept.
        self.assertEqual([len(batch[1]) for batch in first], [8])
        self.assertEqual(first[0][0].shape, (8, 32, 32, 1))
        self.assertAllEqual(first[0][0], again[0][0])
        self.assertNotAllClose(first[0][0], second[0][0])

    def test_rejects_unknown_names(self):
        with self.assertRaisesRegex(ValueError, "Unknown dataset"):
            matrix_capsule_names.dataset_info("cifar")
        with self.assertRaisesRegex(ValueError, "Unknown viewpoint"):
            experiments.load_matrix_capsule_data("mnist", "train", 8, "pose")
        with self.assertRaisesRegex(ValueError, "no 'azimuth' viewpoint"):
            experiments.load_matrix_capsule_data("mnist", "train", 8, "azimuth")
        with self.assertRaisesRegex(ValueError, "no 'rotation' viewpoint"):
            experiments.load_matrix_capsule_epochs("mnist", 8, "rotation")


if __name__ == "__main__":
    tf.test.main()
