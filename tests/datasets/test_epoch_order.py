"""Training data as a function of the epoch: each epoch's order and
augmentation come from the seed and the epoch number alone."""

import numpy as np
import tensorflow as tf

from keras_capsules import datasets
from keras_capsules.datasets import epoch_order


def rows_of(dataset):
    return np.concatenate([batch[0] for _, batch in dataset])


def arrays_of(dataset):
    return [tuple(np.asarray(part) for part in batch) for batch in dataset]


class EpochBatchesTest(tf.test.TestCase):
    def test_each_epoch_is_a_permutation_fixed_by_seed_and_epoch(self):
        rows = np.arange(10)
        epochs = [
            rows_of(epoch_order.epoch_batches((rows,), 4, 3)(epoch))
            for epoch in (0, 1, 0)
        ]
        for order in epochs:
            self.assertAllEqual(np.sort(order), rows)
        self.assertAllEqual(epochs[0], epochs[2])
        self.assertNotAllEqual(epochs[0], epochs[1])
        other_seed = rows_of(epoch_order.epoch_batches((rows,), 4, 4)(0))
        self.assertNotAllEqual(epochs[0], other_seed)

    def test_batches_keep_rows_together_and_count_from_zero(self):
        rows = np.arange(10)
        batches = list(epoch_order.epoch_batches((rows, -rows), 4, 0)(2))
        self.assertEqual([int(index) for index, _ in batches], [0, 1, 2])
        self.assertEqual([len(batch[0]) for _, batch in batches], [4, 4, 2])
        for _, (first, second) in batches:
            self.assertAllEqual(second, -first)

    def test_drop_remainder_gives_full_batches_of_static_shape(self):
        rows = np.arange(10)
        data = epoch_order.epoch_batches((rows,), 4, 0, drop_remainder=True)(1)
        self.assertEqual(data.element_spec[1][0].shape, (4,))
        batches = [batch[0] for _, batch in data]
        self.assertEqual([len(batch) for batch in batches], [4, 4])
        kept = rows_of(epoch_order.epoch_batches((rows,), 4, 0)(1))[:8]
        self.assertAllEqual(np.concatenate(batches), kept)

    def test_batch_seeds_differ_by_epoch_and_index(self):
        seeds = {
            tuple(epoch_order.batch_seed(0, epoch, index).numpy())
            for epoch in range(3)
            for index in range(3)
        }
        self.assertLen(seeds, 9)


class ExperimentEpochsTest(tf.test.TestCase):
    def test_capsnet_epochs_repeat_their_order_and_shifts(self):
        epoch_batches = datasets.load_experiment_epochs(
            "procedural_shapes", 16, shift_pixels=2, size=48, seed=1
        )
        first, again, second = (
            arrays_of(epoch_batches(tf.constant(epoch, tf.int64)))
            for epoch in (0, 0, 1)
        )
        self.assertLen(first, 3)
        for batch, same in zip(first, again):
            self.assertAllEqual(batch[0], same[0])
            self.assertAllEqual(batch[1], same[1])
        self.assertNotAllEqual(first[0][0], second[0][0])

    def test_heinsen_epochs_repeat_their_order_and_crops(self):
        epoch_batches = datasets.load_heinsen_image_epochs(
            "procedural_shapes", 16, size=32, seed=1, pad_pixels=2
        )
        first, again = (
            arrays_of(epoch_batches(tf.constant(0, tf.int64))) for _ in range(2)
        )
        for batch, same in zip(first, again):
            self.assertAllEqual(batch[0], same[0])
        self.assertEqual(first[0][1].shape, (16, 10))

    def test_matrix_capsule_epochs_repeat_their_order(self):
        epoch_batches = datasets.load_matrix_capsule_epochs(
            "procedural_shapes", 16, size=40, seed=1
        )
        first, again, second = (
            arrays_of(epoch_batches(epoch)) for epoch in (0, 0, 1)
        )
        self.assertEqual([len(batch[1]) for batch in first], [16, 16, 8])
        for batch, same in zip(first, again):
            self.assertAllEqual(batch[0], same[0])
            self.assertAllEqual(batch[1], same[1])
        self.assertNotAllEqual(first[0][1], second[0][1])


if __name__ == "__main__":
    tf.test.main()
