"""Training data whose every epoch is a function of its number: the order
and the augmentation seeds of epoch `e` come from `(seed, e)` alone, so a
run resumed from a backup sees the epochs the interrupted run would have
seen (`callbacks.ResumableBackup`)."""

import tensorflow as tf


def _seed(seed, epoch):
    """The stateless seed `(2,)` of one epoch."""
    return tf.stack([tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64)])


def epoch_batches(arrays, batch_size, seed, drop_remainder=False):
    """Returns the batches of the rows of `arrays` as a function of the
    epoch: `of_epoch(epoch)` gives them in an order drawn from `(seed,
    epoch)` alone. The arrays become tensors once, not once per call.

    Args:
        arrays: a tuple of arrays (or tensors) with as many rows each.
        batch_size: int, rows per batch.
        seed: int, the run's seed.
        drop_remainder: bool, leave out the last batch if it is smaller
            than `batch_size` (every batch then has the static shape a
            TPU or a single XLA compilation needs).

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
        batches = rows.batch(batch_size, drop_remainder).map(
            lambda rows: tuple(tf.gather(array, rows) for array in arrays),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        return batches.enumerate()

    return of_epoch


def prepared_epoch_batches(arrays, batch_size, seed, prepare, **options):
    """`epoch_batches` of `arrays` with each batch mapped by
    `prepare(batch, seed)` (its augmentation, drawn from the stateless
    `batch_seed` of the batch) and prefetched; `options` are
    `epoch_batches`' (`drop_remainder`). Returns `of_epoch(epoch)`, a
    `tf.data.Dataset` of the prepared batches."""
    shuffled = epoch_batches(arrays, batch_size, seed, **options)

    def of_epoch(epoch):
        def prepare_batch(index, batch):
            return prepare(batch, batch_seed(seed, epoch, index))

        data = shuffled(epoch).map(
            prepare_batch, num_parallel_calls=tf.data.AUTOTUNE
        )
        return data.prefetch(tf.data.AUTOTUNE)

    return of_epoch


def with_static_batch_size(epoch_batches, batch_size):
    """`epoch_batches` (a function of the epoch that returns a dataset of
    batches) whose every tensor has the static leading size
    `batch_size`, as a TPU needs; a batch of another size (a last partial
    batch: build the batches with `drop_remainder`) is an error when it
    is read."""

    def static(tensor):
        rest = [None] * (tensor.shape.rank - 1)
        return tf.ensure_shape(tensor, [batch_size, *rest])

    def of_epoch(epoch):
        data = epoch_batches(epoch)
        # `map` passes a tuple's parts as separate arguments.
        is_tuple = isinstance(data.element_spec, tuple)

        def set_static(*batch):
            return tf.nest.map_structure(
                static, batch if is_tuple else batch[0]
            )

        return data.map(set_static)

    return of_epoch


def batch_seed(seed, epoch, index):
    """The stateless seed `(2,)` of batch `index` of epoch `epoch`, for
    its random augmentation."""
    return tf.random.experimental.stateless_fold_in(
        _seed(seed, epoch), tf.cast(index, tf.int64)
    )
