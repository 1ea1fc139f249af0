"""A learned embedding of the layer each feature came from (Heinsen 2019,
sec. 5.1.1, Fig. 5b)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_capsules")
class DepthEmbedding(keras.layers.Layer):
    """Adds a learned `(l, m)` vector per depth to `(batch, n, l, m)`
    features: the slice `d` is added to every feature from layer `d` of a
    transformer, so routing that ignores where its inputs come from can
    still tell depths apart. Initialised with zeros, as in the paper.

    Call arguments:
        inputs: `(batch, n, l, m)` features of `n` tokens from `l` layers.

    Returns:
        `(batch, n, l, m)`.

    Examples:

        >>> tuple(DepthEmbedding()(np.zeros((2, 7, 3, 4))).shape)
        (2, 7, 3, 4)
    """

    def build(self, input_shape):
        if len(input_shape) != 4 or None in tuple(input_shape)[2:]:
            raise ValueError(
                f"`{self.name}` expects features of shape (batch, n, l, m) "
                f"with known l and m. Received: {tuple(input_shape)}."
            )
        self.embedding = self.add_weight(
            name="embedding",
            shape=tuple(input_shape)[2:],
            initializer="zeros",
        )

    def call(self, inputs):
        return ops.cast(inputs, self.compute_dtype) + ops.cast(
            self.embedding, self.compute_dtype
        )

    def compute_output_shape(self, input_shape):
        return input_shape
