"""What a callback asks of the distribution a model trains under, on
every Keras backend: its scope, and whether this process writes the
files every process shares."""

import contextlib

import keras


def distribution_scope(model):
    """The scope in which `model`'s new variables are made as its own
    are: its `tf.distribute` strategy's on TensorFlow; on JAX and
    PyTorch, variables follow `keras.distribution` with no scope."""
    if keras.backend.backend() == "tensorflow":
        return model.distribute_strategy.scope()
    return contextlib.nullcontext()


def writes_shared_files(model):
    """Whether this process writes what all processes share (backups):
    the chief under a `tf.distribute` strategy, the first JAX process,
    the first PyTorch process (of `torch.distributed`, where it runs)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return model.distribute_strategy.extended.should_checkpoint
    if backend == "jax":
        import jax  # noqa: PLC0415

        return jax.process_index() == 0
    if backend == "torch":
        import torch.distributed  # noqa: PLC0415

        initialised = torch.distributed.is_initialized()
        return not initialised or torch.distributed.get_rank() == 0
    return True


def build_optimizer(model):
    """Creates `model.optimizer`'s variables for the model's trainable
    weights now, before Keras traces the training step, when the model
    has its weights and the optimizer has none yet (otherwise nothing).

    Keras builds the optimizer in the first trace of `train_step` (for a
    model made outside a `tf.distribute` strategy's scope), and
    `tf.function` traces a function that creates variables a second
    time, so a model whose step is slow to trace pays for it twice.
    Keras builds it the same way after loading a saved model
    (`compile_from_config`). Metrics given to `compile` are still built
    in the first trace, so only a model that tracks its own metrics
    saves the trace. A backup's optimizer state loads only into a built
    optimizer (`ResumableBackup`).
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or optimizer.built or not model.built:
        return
    with distribution_scope(model):
        optimizer.build(model.trainable_variables)
