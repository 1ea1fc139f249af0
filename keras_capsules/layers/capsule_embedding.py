"""A learned vector per capsule index."""

import keras
from keras import ops

from keras_capsules.layers import validation


@keras.saving.register_keras_serializable(package="keras_capsules")
class CapsuleEmbedding(keras.layers.Layer):
    """Adds a learned `(n, d)` vector to `(batch, n, d)` capsules, so a
    set encoder can tell which capsule each element is. The generative
    capsule model gives every template its own parameters (`rho_ij`,
    `M_ij`), so its top-layer encoder needs the identities that a
    permutation-invariant set transformer would otherwise discard.
    Initialised with small random values.

    Call arguments:
        inputs: `(batch, n, d)` with known `n` and `d`.

    Returns:
        `(batch, n, d)`.

    Examples:

        >>> tuple(CapsuleEmbedding()(np.zeros((2, 5, 3))).shape)
        (2, 5, 3)
    """

    def build(self, input_shape):
        _, n, d = validation.capsule_shape(self, input_shape)
        self.embedding = self.add_weight(
            name="embedding",
            shape=(n, d),
            initializer=keras.initializers.RandomNormal(stddev=0.1),
        )

    def call(self, inputs):
        return ops.cast(inputs, self.compute_dtype) + ops.cast(
            self.embedding, self.compute_dtype
        )

    def compute_output_shape(self, input_shape):
        return input_shape
