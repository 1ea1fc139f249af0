"""The `--strategy` flag of the example scripts: which tf.distribute engine."""

import importlib

import tensorflow as tf

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def make_strategy(name):
    """Returns the `tf.distribute.Strategy` named by `--strategy`.

    Args:
        name: `"default"` (one device), `"mirrored"` (all local GPUs, or the
            CPU), `"multi_worker"` (every worker in `TF_CONFIG`) or `"tpu"`.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(
        f"Unknown strategy {name!r}. Expected one of {STRATEGIES}."
    )


def needs_static_shapes(strategy):
    """Whether `strategy` runs on TPUs, which compile one program per
    input shape: training batches must then all have one static shape
    (`drop_remainder`). (Evaluation batches need not: `TPUStrategy` pads
    a last partial batch itself.)"""
    return isinstance(
        strategy,
        (tf.distribute.TPUStrategy, tf.distribute.experimental.TPUStrategy),
    )


def work_around_multi_worker_fit(model):
    """Lets `model.fit` run under `MultiWorkerMirroredStrategy`.

    Keras 3 (up to at least 3.15) fails every multi-worker `fit` in two
    places (keras-team/keras#20585):

    - at the start, it builds the metrics from the first batch reduced
      across replicas with `strategy.reduce`, which this strategy cannot
      do for a nested batch ("Attempt to convert a value (PerReplica
      ...)"); the build needs only the batch's shapes and dtypes, so it
      gets zeros of the data's element spec here (drawing no batch, which
      would also move the data's shuffle on by one pass);
    - after each step, it reduces the step's logs with `strategy.reduce(
      "MEAN", value, axis=0)`, which fails on the scalar logs ("Invalid
      reduction dimension 0 for input with 0 dimensions"); scalars are
      reduced over the replicas alone here.

    Does nothing under other strategies.
    """
    strategy = model.distribute_strategy
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return

    def zeros(spec):
        shape = [1 if size is None else size for size in spec.shape]
        return tf.zeros(shape, spec.dtype)

    def maybe_symbolic_build(iterator=None, data_batch=None):
        if iterator is not None:
            spec = iterator.data_adapter.get_tf_dataset().element_spec
            data_batch = tf.nest.map_structure(zeros, spec)
        with strategy.scope():
            model._symbolic_build(data_batch=data_batch)

    model._maybe_symbolic_build = maybe_symbolic_build
    trainer = importlib.import_module("keras.src.backend.tensorflow.trainer")
    if getattr(trainer.reduce_per_replica, "_scalar_safe", False):
        return
    reduce_per_replica = trainer.reduce_per_replica

    def scalar_safe_reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and isinstance(
            strategy, tf.distribute.MultiWorkerMirroredStrategy
        ):

            def mean(value):
                local = value
                if isinstance(value, tf.distribute.DistributedValues):
                    local = strategy.experimental_local_results(value)[0]
                if tf.is_tensor(local) and local.shape.rank == 0:
                    return strategy.reduce("MEAN", value, axis=None)
                return reduce_per_replica(value, strategy, reduction)

            return tf.nest.map_structure(mean, values)
        return reduce_per_replica(values, strategy, reduction)

    scalar_safe_reduce_per_replica._scalar_safe = True
    trainer.reduce_per_replica = scalar_safe_reduce_per_replica
