"""The base of the losses on class capsules' activations."""

import keras
from keras import ops


class ClassCapsuleLoss(keras.losses.Loss):
    """A loss on `(batch, n)` class capsule activations or their logits.

    Args:
        from_logits: bool, `y_pred` holds activation logits (the capsule
            contract's, `activation = sigmoid(logit)`). Defaults to `False`.
        reduction: how the per-example losses are reduced, as for any
            `keras.losses.Loss`.
        name: the loss's name.
        dtype: the dtype of the loss's computations.

    Examples:

        >>> from keras_capsules.losses import SpreadLoss
        >>> loss = SpreadLoss(from_logits=True)  # a ClassCapsuleLoss
        >>> activations = loss.activations(np.array([[0.0, 2.0]]))
        >>> np.round(ops.convert_to_numpy(activations), 4)
        array([[0.5   , 0.8808]], dtype=float32)
    """

    def __init__(
        self,
        from_logits=False,
        reduction="sum_over_batch_size",
        name=None,
        dtype=None,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.from_logits = bool(from_logits)

    def activations(self, y_pred):
        """`y_pred` as float32 activations in `[0, 1]`."""
        y_pred = ops.cast(y_pred, "float32")
        return ops.sigmoid(y_pred) if self.from_logits else y_pred

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}
