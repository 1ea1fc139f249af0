"""The `--strategy` flag of the example scripts: how a run spreads over
devices. On TensorFlow, a `tf.distribute` strategy; on JAX and PyTorch,
Keras's distribution API (`keras.distribution`), which JAX implements."""

import contextlib

import keras
import numpy as np

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")
# What runs on a backend other than TensorFlow: one device, or (JAX)
# every local device with `keras.distribution.DataParallel`.
_KERAS_STRATEGIES = {"jax": ("default", "mirrored"), "torch": ("default",)}


class KerasDistribution:
    """A run's distribution on JAX or PyTorch, with what the scripts ask of
    a `tf.distribute` strategy: `scope()`, with nothing to enter (Keras's
    distribution is set for the whole process).

    Args:
        distribution: the `keras.distribution.Distribution` set, or None
            (one device).
    """

    def __init__(self, distribution=None):
        self.distribution = distribution

    def scope(self):
        return contextlib.nullcontext()


def make_strategy(name):
    """Returns the strategy named by `--strategy`.

    Args:
        name: `"default"` (one device), `"mirrored"` (all local GPUs, or
            the CPU; on JAX every local device, `DataParallel`),
            `"multi_worker"` (every worker in `TF_CONFIG`) or `"tpu"`;
            the last two on TensorFlow only.

    Returns:
        A `tf.distribute.Strategy` on TensorFlow, a `KerasDistribution`
        on another backend.
    """
    if name not in STRATEGIES:
        raise ValueError(
            f"Unknown strategy {name!r}. Expected one of {STRATEGIES}."
        )
    backend = keras.backend.backend()
    if backend != "tensorflow":
        return _keras_distribution(name, backend)
    import tensorflow as tf  # noqa: PLC0415

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)


def _keras_distribution(name, backend):
    """The `KerasDistribution` of `--strategy=name` on `backend`, set for
    the process."""
    supported = _KERAS_STRATEGIES.get(backend, ("default",))
    if name not in supported:
        raise ValueError(
            f"Keras's {backend!r} backend takes --strategy in {supported}. "
            f"Received: --strategy={name}. Use one of those, or "
            "KERAS_BACKEND=tensorflow, which takes every strategy."
        )
    if name == "default":
        return KerasDistribution()
    distribution = keras.distribution.DataParallel(
        devices=keras.distribution.list_devices()
    )
    keras.distribution.set_distribution(distribution)
    return KerasDistribution(distribution)


def replicas(strategy):
    """The devices a step of `strategy` runs on, each a share of the
    batch."""
    if isinstance(strategy, KerasDistribution):
        if strategy.distribution is None:
            return 1
        return int(np.size(strategy.distribution.device_mesh.devices))
    return int(strategy.num_replicas_in_sync)


@contextlib.contextmanager
def one_device(strategy):
    """A scope that evaluates on one device under `strategy`'s
    `keras.distribution.DataParallel` (whose devices take equal shares of
    every batch, which a last partial batch of a test set may not split
    into); under other strategies, nothing."""
    if not isinstance(strategy, KerasDistribution) or not (
        strategy.distribution
    ):
        yield
        return
    keras.distribution.set_distribution(None)
    try:
        yield
    finally:
        keras.distribution.set_distribution(strategy.distribution)


def is_chief(strategy):
    """Whether this process writes the run's shared outputs: the chief of
    a `tf.distribute` strategy; on JAX the first process."""
    if isinstance(strategy, KerasDistribution):
        if keras.backend.backend() != "jax":
            return True
        import jax  # noqa: PLC0415

        return jax.process_index() == 0
    return strategy.extended.should_checkpoint


def worker_index(strategy):
    """This worker's index in a multi-worker run."""
    if isinstance(strategy, KerasDistribution):
        import jax  # noqa: PLC0415

        return jax.process_index()
    return strategy.cluster_resolver.task_id


def needs_static_shapes(strategy):
    """Whether every training batch must have one static shape
    (`drop_remainder`): on TPUs, which compile one program per input
    shape (evaluation batches need not: `TPUStrategy` pads a last
    partial batch itself), and under `keras.distribution.DataParallel`,
    which splits every batch evenly over the devices."""
    if strategy is None:
        return False
    if isinstance(strategy, KerasDistribution):
        return strategy.distribution is not None
    import tensorflow as tf  # noqa: PLC0415

    return isinstance(
        strategy,
        (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy),
    )
