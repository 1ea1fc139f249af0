"""Input scores from presence weights (Heinsen 2019, sec. 5.1, Fig. 5d)."""

import keras
from keras import ops

from keras_capsules.ops.arguments import positive_int

# Presence weights are clipped to [_EPSILON, 1 - _EPSILON] before the
# logit: scores stay finite (+-13.8) where the paper has +-infinity. Absent
# positions (weight 0) are also masked, so they still count for nothing.
_EPSILON = 1e-6


@keras.saving.register_keras_serializable(package="keras_capsules")
class PresenceScores(keras.layers.Layer):
    """Turns presence weights `x` in [0, 1] into input scores
    `a_inp = log(x / (1 - x))`, and masks positions of weight 0.

    Heinsen's sequence model scores each token embedding by the logit of
    its padding mask: 1 for tokens, 0 for padding, in between where mixup
    blends a token with padding. Each position may stand for `repeats`
    input capsules in a row (one per transformer layer), and its score is
    repeated for each.

    Args:
        repeats: int, input capsules per position. Defaults to 1.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: float `(batch, n)` presence weights.

    Returns:
        `(batch, n * repeats)` scores, with a Keras mask that is False where
        the weight is 0.

    Examples:

        >>> scores = PresenceScores()(np.array([[0.5, 1.0, 0.0]]))
        >>> np.round(ops.convert_to_numpy(scores), 2)
        array([[  0.  ,  13.8 , -13.82]], dtype=float32)
    """

    def __init__(self, repeats=1, **kwargs):
        super().__init__(**kwargs)
        self.repeats = positive_int("PresenceScores", "repeats", repeats)

    def build(self, input_shape):
        if len(input_shape) != 2:
            raise ValueError(
                f"`{self.name}` expects presence weights of shape (batch, "
                f"n). Received: {tuple(input_shape)}."
            )

    def _repeat(self, x):
        if self.repeats == 1:
            return x
        # expand_dims, not a new-axis slice: LiteRT's builtin ops take no
        # new-axis slice of a tensor of unknown size.
        return ops.reshape(
            ops.repeat(ops.expand_dims(x, 2), self.repeats, axis=2),
            (ops.shape(x)[0], -1),
        )

    def call(self, inputs):
        weights = ops.clip(
            ops.cast(inputs, "float32"), _EPSILON, 1.0 - _EPSILON
        )
        scores = ops.log(weights) - ops.log(1.0 - weights)  # ONNX: no log1p
        return ops.cast(self._repeat(scores), self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        present = ops.greater(inputs, 0)
        if mask is not None:
            present = ops.logical_and(present, mask)
        return self._repeat(present)

    def compute_output_shape(self, input_shape):
        batch, n = input_shape
        return (batch, None if n is None else n * self.repeats)

    def get_config(self):
        return {**super().get_config(), "repeats": self.repeats}
