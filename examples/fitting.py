"""Flag-free helpers of the example scripts: the XLA choice, the callbacks
and the backup of a long run, and the serving export. `examples/runs.py`
applies them to the run-level flags; scripts that keep their own flags
call them directly."""

import os

import keras
import tensorflow as tf
from absl import logging

from keras_capsules.callbacks import ResumableBackup


def use_xla(flag_value, strategy=None):
    """`--jit_compile`: `true`, `false`, or `auto` (GPU and TPU only).

    Under a multi-worker strategy without GPUs or TPUs the answer is
    False whatever the flag (with a warning for `true`): XLA cannot
    compile the collective ops of CPU workers.
    """
    accelerators = tf.config.list_logical_devices(
        "GPU"
    ) + tf.config.list_logical_devices("TPU")
    if not accelerators and isinstance(
        strategy, tf.distribute.MultiWorkerMirroredStrategy
    ):
        if flag_value == "true":
            logging.warning(
                "--jit_compile=true ignored: XLA cannot compile the "
                "collective ops of CPU workers."
            )
        return False
    if flag_value != "auto":
        return flag_value == "true"
    return bool(accelerators)


def make_callbacks(model_dir, model_file):
    """The latest model each epoch and TensorBoard logs (fit's progress bar
    is Keras's own; `make_backup` gives the backup)."""
    return [
        keras.callbacks.ModelCheckpoint(os.path.join(model_dir, model_file)),
        keras.callbacks.TensorBoard(os.path.join(model_dir, "logs")),
    ]


def make_backup(backup_dir, backup_steps, epoch_batches):
    """A `callbacks.ResumableBackup` in `backup_dir`: every epoch's end
    and every `backup_steps` steps (at epoch ends only when the number of
    batches of `epoch_batches(0)` is unknown)."""
    length = int(epoch_batches(tf.constant(0, tf.int64)).cardinality())
    return ResumableBackup(
        backup_dir, save_freq=backup_steps if length >= 0 else "epoch"
    )


def export_serving(model, export_dir, input_spec, serve=None):
    """Writes a SavedModel of `model` to `export_dir` whose `serve`
    signature maps `input_spec` inputs to `serve(inputs)`, a dict of
    tensors; by default `class_outputs` of the model's outputs."""
    archive = keras.export.ExportArchive()
    archive.track(model)
    if serve is None:

        def serve(inputs):
            return class_outputs(model(inputs, training=False))

    archive.add_endpoint("serve", serve, input_signature=[input_spec])
    archive.write_out(export_dir, verbose=False)


def class_outputs(scores):
    """Serving outputs of a classifier's class scores (logits), float32:
    `{"probabilities": softmax, "scores": the scores}`."""
    scores = tf.cast(scores, tf.float32)
    return {"probabilities": tf.nn.softmax(scores), "scores": scores}
