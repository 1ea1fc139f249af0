"""`datasets.ArrayBatches` and `array_epoch_batches`: in-memory batches on
every backend, each epoch's order from the seed and the epoch alone."""

import keras
import numpy as np

from keras_capsules import datasets
from tests import every_backend


class ArrayBatchesTest(every_backend.TestCase):
    def test_batches_follow_the_order_with_a_last_partial_one(self):
        rows = np.arange(7)
        batches = datasets.ArrayBatches((rows, rows * 10), 3, order=rows[::-1])
        self.assertLen(batches, 3)
        self.assertAllEqual(batches[0][0], [6, 5, 4])
        self.assertAllEqual(batches[0][1], [60, 50, 40])
        self.assertAllEqual(batches[2][0], [0])
        with self.assertRaises(IndexError):
            batches[3]

    def test_drop_remainder_leaves_out_the_partial_batch(self):
        batches = datasets.ArrayBatches((np.arange(7),), 3, drop_remainder=True)
        self.assertLen(batches, 2)
        self.assertAllEqual(np.concatenate(list(batches)), np.arange(6))

    def test_arrays_of_unequal_rows_are_refused(self):
        with self.assertRaisesRegex(ValueError, r"row counts \[3, 2\]"):
            datasets.ArrayBatches((np.zeros(3), np.zeros(2)), 2)
        with self.assertRaisesRegex(ValueError, "batch_size"):
            datasets.ArrayBatches((np.zeros(3),), 0)

    def test_a_model_fits_and_evaluates_them(self):
        features = np.random.default_rng(0).normal(size=(20, 3))
        targets = features.sum(axis=1, keepdims=True)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        batches = datasets.ArrayBatches((features, targets), 8)
        model.fit(batches, epochs=1, verbose=0)
        evaluated = model.evaluate(batches, verbose=0)
        expected = model.evaluate(features, targets, batch_size=8, verbose=0)
        self.assertAllClose(evaluated, expected, rtol=1e-6)


class ArrayEpochBatchesTest(every_backend.TestCase):
    def test_each_epoch_is_a_permutation_drawn_from_seed_and_epoch(self):
        rows = np.arange(10)
        of_epoch = datasets.array_epoch_batches((rows,), 4, seed=5)
        orders = [np.concatenate(list(of_epoch(epoch))) for epoch in (0, 1)]
        for order in orders:
            self.assertAllEqual(np.sort(order), rows)
        self.assertNotAllClose(orders[0], orders[1])
        # The same (seed, epoch) gives the same order, in any process.
        again = datasets.array_epoch_batches((rows,), 4, seed=5)
        self.assertAllEqual(np.concatenate(list(again(1))), orders[1])
        other_seed = datasets.array_epoch_batches((rows,), 4, seed=6)
        self.assertNotAllClose(np.concatenate(list(other_seed(1))), orders[1])
        self.assertAllEqual(
            np.random.default_rng([5, 1]).permutation(10), orders[1]
        )


class AugmentedEpochsTest(every_backend.TestCase):
    def _noise(self, batch, rng):
        # Adds a draw of the generator to each row: which generator each
        # batch gets shows in its values.
        rows, labels = batch
        return rows + rng.uniform(size=rows.shape), labels

    def test_each_batch_draws_from_seed_epoch_and_index(self):
        rows = np.zeros((6, 2))
        of_epoch = datasets.array_epoch_batches(
            (rows, np.arange(6)), 2, seed=3, augment=self._noise
        )
        first = of_epoch(1)[2]
        self.assertAllEqual(first[0], of_epoch(1)[2][0])  # repeatable
        want = np.random.default_rng([3, 1, 2]).uniform(size=(2, 2))
        self.assertAllEqual(first[0], want)
        self.assertNotAllClose(of_epoch(2)[2][0], first[0])
        self.assertNotAllClose(of_epoch(1)[1][0], first[0])
        # The labels follow the epoch's order, untouched.
        order = np.random.default_rng([3, 1]).permutation(6)
        self.assertAllEqual(first[1], order[4:6])
