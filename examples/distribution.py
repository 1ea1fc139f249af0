"""The `--strategy` flag of the example scripts: which tf.distribute engine."""

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
