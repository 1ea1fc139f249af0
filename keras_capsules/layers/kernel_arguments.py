"""The `kernel_initializer` and `kernel_regularizer` arguments of the
capsule layers: set once, serialised once."""

import keras


def set_kernel_arguments(layer, initializer, regularizer):
    """Sets `layer.kernel_initializer` (None stays None: the layer's own
    default applies at build) and `layer.kernel_regularizer`."""
    layer.kernel_initializer = (
        None if initializer is None else keras.initializers.get(initializer)
    )
    layer.kernel_regularizer = keras.regularizers.get(regularizer)


def kernel_config(layer):
    """The config entries of `layer`'s kernel arguments."""
    initializer = layer.kernel_initializer
    return {
        "kernel_initializer": (
            None
            if initializer is None
            else keras.initializers.serialize(initializer)
        ),
        "kernel_regularizer": keras.regularizers.serialize(
            layer.kernel_regularizer
        ),
    }
