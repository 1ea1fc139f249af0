"""Which compiler runs the op being traced, for ops whose fastest form
differs: XLA fuses elementwise work into one pass over a tensor, where
TensorFlow's own kernels write every intermediate out and are fastest
with one large product instead."""

import tensorflow as tf


def compiled_by_xla():
    """True while tracing a function that XLA compiles
    (`tf.function(jit_compile=True)`, Keras's `jit_compile=True`).

    Reads TensorFlow's XLA context of the graph being built (not a public
    API: if it moves, this answers False and the ops take the form that
    suits TensorFlow's own kernels, equally correct).
    """
    try:
        from tensorflow.python.ops import control_flow_util
    except ImportError:  # pragma: no cover - depends on TensorFlow's layout
        return False
    if tf.executing_eagerly():
        return False
    try:
        graph = tf.compat.v1.get_default_graph()
        return bool(control_flow_util.GraphOrParentsInXlaContext(graph))
    except AttributeError:  # pragma: no cover
        return False
