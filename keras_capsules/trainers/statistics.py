"""Sums over a `tf.data.Dataset`, all-reduced across replicas."""

import tensorflow as tf


class DatasetSum:
    """Sums `per_batch_sums(batch, *args)` over the batches of a dataset.

    `per_batch_sums` returns a nest of tensors. It runs compiled with XLA on
    every replica of the current distribution strategy (the default strategy
    on one device), and the replicas' sums are reduced with SUM, so the data
    never has to fit in memory and any strategy gives the same sum. The
    compiled step is built once and reused for every call.

    Args:
        per_batch_sums: function of a batch and extra tensor arguments.
    """

    def __init__(self, per_batch_sums):
        self._replica_fn = tf.function(
            per_batch_sums, jit_compile=True, reduce_retracing=True
        )
        self._step = tf.function(self._reduced_step, reduce_retracing=True)

    def _reduced_step(self, batch, *args):
        strategy = tf.distribute.get_strategy()
        per_replica = strategy.run(self._replica_fn, args=(batch, *args))
        return tf.nest.map_structure(
            lambda t: strategy.reduce(tf.distribute.ReduceOp.SUM, t, axis=None),
            per_replica,
        )

    def __call__(self, dataset, *args):
        """Returns the summed nest as NumPy arrays."""
        strategy = tf.distribute.get_strategy()
        if strategy.num_replicas_in_sync == 1:
            # Trace once for the dataset's batches (their batch axis is
            # None when the last one is partial), rather than once for
            # full batches and again for the last.
            self._step.get_concrete_function(
                dataset.element_spec,
                *(tf.TensorSpec.from_tensor(arg) for arg in args),
            )
        total = None
        for batch in strategy.experimental_distribute_dataset(dataset):
            sums = self._step(batch, *args)
            total = (
                sums
                if total is None
                else tf.nest.map_structure(tf.add, total, sums)
            )
        if total is None:
            raise ValueError(
                "The dataset is empty: there is nothing to sum over."
            )
        return tf.nest.map_structure(lambda t: t.numpy(), total)
