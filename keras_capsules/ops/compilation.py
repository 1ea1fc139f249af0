"""Which compiler runs the op being traced, for ops whose fastest form
differs, and a tensor the compiler writes out once.

Both are TensorFlow's (`backend/tensorflow/compilation.py`): on another
backend, and inside `fast_paths.neutral_forms()`, no op is taken to be
compiled by XLA and every tensor is returned as it is.
"""

from keras_capsules.ops.fast_paths import fast_path


def compiled_by_xla():
    """True while TensorFlow traces a function that XLA compiles
    (`tf.function(jit_compile=True)`, Keras's `jit_compile=True`): the ops
    then take their forms for XLA. False on other backends."""
    compiled = fast_path("compiled_by_xla")
    return compiled is not None and compiled()


def written_once(tensor):
    """`tensor` unchanged in value and gradient; under TensorFlow's XLA a
    single buffer, rather than recomputed inside every operation that
    reads it (see `backend/tensorflow/compilation.py`)."""
    write = fast_path("written_once")
    return tensor if write is None else write(tensor)
