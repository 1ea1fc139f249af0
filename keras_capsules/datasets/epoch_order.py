"""Training data whose every epoch is a function of its number: the order
and the augmentation seeds of epoch `e` come from `(seed, e)` alone, so a
run resumed from a backup sees the epochs the interrupted run would have
seen (`callbacks.ResumableBackup`)."""

import tensorflow as tf


def _seed(seed, epoch):
    """The stateless seed `(2,)` of one epoch."""
    return tf.stack([tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64)])


def epoch_batches(arrays, batch_size, seed):
    """Returns the batches of the rows of `arrays` as a function of the
    epoch: `of_epoch(epoch)` gives them in an order drawn from `(seed,
    epoch)` alone. The arrays become tensors once, not once per call.

    Args:
        arrays: a tuple of arrays (or tensors) with as many rows each.
        batch_size: int, rows per batch (the last batch may be smaller).
        seed: int, the run's seed.

    Returns:
        `of_epoch(epoch)`, for an int64 scalar tensor (or int) `epoch`: a
        `tf.data.Dataset` of `(index, batch)`, the batch's index in the
        epoch and a tuple of the batch of each array.
    """
    arrays = tuple(tf.convert_to_tensor(array) for array in arrays)
    count = int(arrays[0].shape[0])

    def of_epoch(epoch):
        keys = tf.random.stateless_uniform([count], _seed(seed, epoch))
        rows = tf.data.Dataset.from_tensor_slices(tf.argsort(keys))
        batches = rows.batch(batch_size).map(
            lambda rows: tuple(tf.gather(array, rows) for array in arrays),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        return batches.enumerate()

    return of_epoch


def batch_seed(seed, epoch, index):
    """The stateless seed `(2,)` of batch `index` of epoch `epoch`, for
    its random augmentation."""
    return tf.random.experimental.stateless_fold_in(
        _seed(seed, epoch), tf.cast(index, tf.int64)
    )
