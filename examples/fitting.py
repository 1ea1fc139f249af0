"""Flag-free helpers of the example scripts: the XLA choice, the callbacks
and the backup of a long run, and the serving export. `examples/runs.py`
applies them to the run-level flags; scripts that keep their own flags
call them directly."""

import os

import keras
from absl import logging

from keras_capsules.callbacks import ResumableBackup
from keras_capsules.tensorflow_parts import (
    require_tensorflow,
    tensorflow_installed,
)


def use_xla(flag_value, strategy=None):
    """`--jit_compile`: `true`, `false`, or `auto`: on TensorFlow, XLA on
    GPU and TPU only; on JAX always (`jax.jit`, Keras's default); on
    PyTorch never (`torch.compile`, which `true` asks for).

    Under a multi-worker strategy without GPUs or TPUs the answer is
    False whatever the flag (with a warning for `true`): XLA cannot
    compile the collective ops of CPU workers.
    """
    backend = keras.backend.backend()
    if backend != "tensorflow":
        if flag_value != "auto":
            return flag_value == "true"
        return backend == "jax"
    import tensorflow as tf  # noqa: PLC0415

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
    """The latest model each epoch and, where TensorFlow is installed
    (Keras writes them with `tf.summary`), TensorBoard logs (fit's
    progress bar is Keras's own; `make_backup` gives the backup)."""
    checkpoint = keras.callbacks.ModelCheckpoint(
        os.path.join(model_dir, model_file)
    )
    if not tensorflow_installed():
        return [checkpoint]
    logs = keras.callbacks.TensorBoard(os.path.join(model_dir, "logs"))
    return [checkpoint, logs]


def make_backup(backup_dir, backup_steps, epoch_batches):
    """A `callbacks.ResumableBackup` in `backup_dir`: every epoch's end
    and every `backup_steps` steps (at epoch ends only when the number of
    batches of `epoch_batches(0)` is unknown: a `tf.data.Dataset` of
    unknown cardinality)."""
    first = epoch_batches(0)
    known = isinstance(first, keras.utils.PyDataset) or (
        int(first.cardinality()) >= 0
    )
    return ResumableBackup(
        backup_dir, save_freq=backup_steps if known else "epoch"
    )


def tensor_spec(shape, dtype, name):
    """The `tf.TensorSpec` of a serving input (`export_serving`)."""
    require_tensorflow("--export_dir (a SavedModel)")
    import tensorflow as tf  # noqa: PLC0415

    return tf.TensorSpec(shape, dtype, name)


def export_serving(model, export_dir, input_spec, serve=None):
    """Writes a SavedModel of `model` to `export_dir` whose `serve`
    signature maps `input_spec` inputs to `serve(inputs)`, a dict of
    tensors; by default `class_outputs` of the model's outputs. Needs
    TensorFlow installed (on JAX, Keras exports through `jax2tf`)."""
    require_tensorflow("--export_dir (a SavedModel)")
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
    scores = keras.ops.cast(scores, "float32")
    return {"probabilities": keras.ops.softmax(scores), "scores": scores}
