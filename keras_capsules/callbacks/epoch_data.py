"""The training data of a `ResumableBackup`: every epoch's batches from a
function of the epoch number, as a `tf.data.Dataset` (TensorFlow
installed, any backend) or a `keras.utils.PyDataset` (any backend)."""

import keras


class EpochData:
    """The epochs of `epoch_batches`, for `fit` and for resuming.

    Args:
        epoch_batches: a function of the epoch number that returns the
            epoch's batches: a `keras.utils.PyDataset` (given an int), or
            a `tf.data.Dataset` (given an int64 scalar tensor). Every
            epoch must have as many batches as epoch 0.
    """

    def __init__(self, epoch_batches):
        self.epoch_batches = epoch_batches
        first = epoch_batches(0)
        self.uses_tf_data = not isinstance(first, keras.utils.PyDataset)
        self.epoch = 0  # The epoch `continuing()` serves now.
        if self.uses_tf_data:
            import tensorflow as tf  # noqa: PLC0415

            self._tf = tf
            # Read by the pipeline of `continuing()` when an epoch starts.
            with tf.init_scope():
                self._epoch_variable = tf.Variable(
                    0, dtype=tf.int64, trainable=False
                )
            first = self.of_epoch(0)
        self.length = _length(first)

    def set_epoch(self, epoch):
        """Makes `continuing()` serve epoch `epoch` next."""
        self.epoch = int(epoch)
        if self.uses_tf_data:
            self._epoch_variable.assign(epoch)

    def of_epoch(self, epoch, skip=0):
        """The batches of epoch `epoch` after its first `skip`."""
        if not self.uses_tf_data:
            batches = self.epoch_batches(int(epoch))
            return _Skipped(batches, skip) if skip else batches
        epoch = self._tf.constant(epoch, self._tf.int64)
        return self.epoch_batches(epoch).skip(skip)

    def continuing(self):
        """Data for one `fit` over many epochs whose epoch `e` gives
        `epoch_batches(e)` (`set_epoch(e)` when it starts)."""
        if not self.uses_tf_data:
            return _Continuing(self)
        tf = self._tf
        data = tf.data.Dataset.range(1).flat_map(
            lambda _: self.epoch_batches(self._epoch_variable)
        )
        if self.length >= 0:  # The progress bar then knows it from the start.
            data = data.apply(
                tf.data.experimental.assert_cardinality(self.length)
            )
        return data


def _length(batches):
    """Batches in `batches`, -1 where unknown."""
    if isinstance(batches, keras.utils.PyDataset):
        return len(batches)
    return int(batches.cardinality())


class _Skipped(keras.utils.PyDataset):
    """The batches of a `PyDataset` after its first `skip`."""

    def __init__(self, batches, skip):
        super().__init__()
        self._batches = batches
        self._skip = skip

    def __len__(self):
        return max(len(self._batches) - self._skip, 0)

    def __getitem__(self, index):
        return self._batches[index + self._skip]


class _Continuing(keras.utils.PyDataset):
    """Batch `i` of the epoch `EpochData.epoch` names (read by each call;
    Keras draws the batches of an epoch after its callbacks'
    `on_epoch_begin`)."""

    def __init__(self, epochs):
        super().__init__()
        self._epochs = epochs
        self._current = (None, None)  # (epoch, its batches)

    def __len__(self):
        return self._epochs.length

    def __getitem__(self, index):
        epoch = self._epochs.epoch
        if self._current[0] != epoch:
            self._current = (epoch, self._epochs.epoch_batches(epoch))
        return self._current[1][index]
