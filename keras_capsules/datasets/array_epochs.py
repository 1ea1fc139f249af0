"""In-memory training data whose every epoch is a function of its number,
on any Keras backend: the NumPy counterpart of `epoch_order` (which
builds `tf.data` pipelines). The order of epoch `e` comes from `(seed,
e)` alone, so a run resumed from a backup sees the epochs the
interrupted run would have seen (`callbacks.ResumableBackup`)."""

import keras
import numpy as np

from keras_capsules.ops.arguments import positive_int


class ArrayBatches(keras.utils.PyDataset):
    """The batches of the rows of `arrays` in a given order, for `fit`,
    `evaluate` and `predict` on any backend.

    Args:
        arrays: a tuple of arrays with as many rows each.
        batch_size: int, rows per batch.
        order: optional int array, the rows in the order they are served
            (default: as stored); its length sets the batches.
        drop_remainder: bool, leave out a last batch smaller than
            `batch_size`.
        transform: optional function `(batch, index) -> batch` applied to
            each batch (a tuple of arrays) and its index, e.g. a random
            augmentation seeded with the index.

    Each item is a tuple of the batch of each array (a single array for
    one array).

    Examples:

        >>> batches = ArrayBatches((np.arange(5), np.arange(5) * 10), 2)
        >>> len(batches), batches[2]
        (3, (array([4]), array([40])))
    """

    def __init__(
        self,
        arrays,
        batch_size,
        order=None,
        drop_remainder=False,
        transform=None,
    ):
        super().__init__()
        self.transform = transform
        self.arrays = tuple(np.asarray(array) for array in arrays)
        counts = {len(array) for array in self.arrays}
        if len(counts) != 1:
            raise ValueError(
                "`ArrayBatches` expects arrays of as many rows each. "
                f"Received row counts {[len(a) for a in self.arrays]}."
            )
        self.batch_size = positive_int("ArrayBatches", "batch_size", batch_size)
        self.order = (
            np.arange(counts.pop()) if order is None else np.asarray(order)
        )
        whole, rest = divmod(len(self.order), self.batch_size)
        self._length = whole + (1 if rest and not drop_remainder else 0)

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        if not 0 <= index < self._length:
            raise IndexError(
                f"Batch {index} of {self._length} batches requested."
            )
        start = index * self.batch_size
        rows = self.order[start : start + self.batch_size]
        batch = tuple(array[rows] for array in self.arrays)
        if self.transform is not None:
            batch = tuple(self.transform(batch, index))
        return batch if len(batch) > 1 else batch[0]


def array_epoch_batches(
    arrays, batch_size, seed, drop_remainder=False, augment=None
):
    """Returns the batches of the rows of `arrays` as a function of the
    epoch: `of_epoch(epoch)` is an `ArrayBatches` in an order drawn from
    `(seed, epoch)` alone (NumPy's generator), the same on every backend
    and in every process; `augment` draws from `(seed, epoch, batch)`.

    Args:
        arrays: a tuple of arrays with as many rows each.
        batch_size: int, rows per batch.
        seed: int >= 0, the run's seed.
        drop_remainder: bool, leave out the last batch if it is smaller
            than `batch_size`.
        augment: optional function `(batch, rng) -> batch` of a batch (a
            tuple of arrays) and a `numpy.random.Generator` seeded with
            `(seed, epoch, batch index)`, e.g. `shift_images`' random
            shifts.

    Examples:

        >>> of_epoch = array_epoch_batches((np.arange(6),), 3, seed=0)
        >>> sorted(np.concatenate(list(of_epoch(1))).tolist())
        [0, 1, 2, 3, 4, 5]
        >>> bool(np.all(of_epoch(1)[0] == of_epoch(1)[0]))
        True
    """
    arrays = tuple(np.asarray(array) for array in arrays)
    count = len(arrays[0])

    def of_epoch(epoch):
        epoch = int(epoch)
        order = np.random.default_rng([seed, epoch]).permutation(count)
        transform = None
        if augment is not None:

            def transform(batch, index):
                return augment(
                    batch, np.random.default_rng([seed, epoch, index])
                )

        return ArrayBatches(
            arrays, batch_size, order, drop_remainder, transform
        )

    return of_epoch
