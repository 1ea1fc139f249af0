"""Capsule lengths: the probability that each capsule's entity is present."""

import keras
from keras import ops

from keras_capsules.ops.squash import safe_norm


@keras.saving.register_keras_serializable(package="keras_capsules")
class CapsuleLength(keras.layers.Layer):
    """Returns the length of each capsule (Sabour et al. 2017, sec. 2).

    The length of a squashed capsule lies in `[0, 1)` and is read as the
    probability that its entity is present; CapsNet's class scores.

    Call arguments:
        inputs: `(batch, n, d)` capsules.

    Returns:
        `(batch, n)` lengths.

    Examples:

        >>> CapsuleLength()(np.array([[[3.0, 4.0]]])).numpy()
        array([[5.]], dtype=float32)
    """

    def call(self, inputs):
        return ops.cast(
            safe_norm(ops.cast(inputs, "float32"), axis=-1), self.compute_dtype
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1])
