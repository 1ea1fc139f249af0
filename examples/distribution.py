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
