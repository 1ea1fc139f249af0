"""The update every custom `train_step` makes, in one place: loss scaling
under `mixed_float16`, the replicas' shares (of the loss and of the
global batch), and the public loss metric."""

import tensorflow as tf
from keras import ops

# Defined with the backup, which runs on every backend.
from keras_capsules.callbacks.distributed_training import (  # noqa: F401
    build_optimizer,
)


def replica_share(loss):
    """`loss` divided by the replicas in sync: their gradients are summed.

    Keras's `compute_loss` already returns this share; a loss computed
    another way (a bound, a sum of terms) takes it here.
    """
    replicas = tf.distribute.get_replica_context().num_replicas_in_sync
    return loss / ops.cast(replicas, loss.dtype)


def replica_rows(local_batch_size):
    """Where this replica's examples lie in the global batch: `(offset,
    total)`, int32 scalars, or None with one replica in sync.

    A `tf.distribute` strategy splits each global batch into consecutive
    per-replica slices, in the order of `replica_id_in_sync_group`; a
    step that draws noise for the global batch and keeps rows `offset` to
    `offset + local_batch_size` draws what one process training on the
    global batch draws (`distributions.CapsulePosterior.sample`).
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    size = tf.reshape(tf.cast(local_batch_size, tf.int32), (1,))
    sizes = context.all_gather(size, axis=0)
    before = tf.range(context.num_replicas_in_sync) < tf.cast(
        context.replica_id_in_sync_group, tf.int32
    )
    offset = tf.reduce_sum(tf.where(before, sizes, 0))
    return offset, tf.reduce_sum(sizes)


def minimize(model, tape, loss):
    """Applies one optimizer step to `model.trainable_weights` from the
    `loss` (this replica's share) that `tape` recorded.

    The backward pass starts from the optimizer's loss scale
    (`optimizer.scale_loss(1)`: 2^15 and adjusted under `mixed_float16`,
    1 otherwise) instead of 1, which is scaling the loss, and
    `optimizer.apply` divides it out again (skipping a step whose
    gradients overflowed), so float16 gradients neither underflow nor
    reach the weights scaled.
    """
    seed = model.optimizer.scale_loss(ops.ones_like(loss))
    gradients = tape.gradient(
        loss, model.trainable_weights, output_gradients=seed
    )
    model.optimizer.apply(gradients, model.trainable_weights)


def update_loss_metric(model, loss, batch_size):
    """Updates the model's `"loss"` metric (the one `compile` makes and
    fit's progress bar shows) with this replica's share of the loss (as
    `minimize` takes it), reported per example as Keras's own
    `train_step` does, weighted by the batch size."""
    replicas = tf.distribute.get_replica_context().num_replicas_in_sync
    for metric in model.metrics:
        if metric.name == "loss":
            metric.update_state(
                loss * ops.cast(replicas, loss.dtype), sample_weight=batch_size
            )
