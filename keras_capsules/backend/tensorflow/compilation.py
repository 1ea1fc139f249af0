"""Which compiler runs the op being traced, and a tensor XLA writes out
once: XLA fuses elementwise work into one pass over a tensor, where
TensorFlow's own kernels write every intermediate out and are fastest
with one large product instead."""

import tensorflow as tf

from keras_capsules.private_apis import compiling_with_xla


def compiled_by_xla():
    """True while tracing a function that XLA compiles
    (`tf.function(jit_compile=True)`, Keras's `jit_compile=True`); see
    `private_apis.compiling_with_xla`."""
    return compiling_with_xla()


def written_once(tensor):
    """`tensor` unchanged, but under XLA written out once, and its gradient
    too, instead of recomputed inside each operation that reads it.

    XLA fuses a cheap producer (a transpose, a subtraction) into every
    consumer, so a vote-sized tensor read by several fusions is recomputed
    by each, through every layout change on its way. XLA does not
    duplicate a division; dividing by a one that it cannot prove is one
    (`exp(0 s)`, `s` an entry of the tensor, made finite) makes the
    tensor a single buffer. The value is exact: `x / 1 = x` (so should a
    release of XLA change that heuristic, only the speed changes).
    Outside XLA TensorFlow writes every operation's result anyway, and
    the tensor is returned as it is.
    """
    if not compiled_by_xla():
        return tensor

    def divided_by_one(value):
        # A scalar from the first entry (0 for an empty tensor).
        first = tf.reduce_sum(tf.reshape(value, [-1])[:1])
        one = tf.exp(0.0 * tf.where(tf.math.is_finite(first), first, 0.0))
        return value / tf.stop_gradient(one)

    @tf.custom_gradient
    def identity(value):
        return divided_by_one(value), divided_by_one

    return identity(tensor)
