"""Sum of squared pixel errors of a reconstruction (Sabour et al. sec. 4.1)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_capsules")
class ReconstructionLoss(keras.losses.Loss):
    """Per-example sum of squared differences between images.

    CapsNet adds this loss, scaled by 0.0005, to the margin loss so that the
    class capsules keep the instantiation parameters of their digit.

    Args:
        reduction: how the per-example losses are reduced, as for any
            `keras.losses.Loss`.
        name: the loss's name.
        dtype: the dtype of the loss's computations.

    Call arguments:
        y_true: `(batch, ...)` images.
        y_pred: `(batch, ...)` reconstructions of the same shape.

    Examples:

        >>> float(ReconstructionLoss()(np.ones((2, 4, 4)), np.zeros((2, 4, 4))))
        16.0
    """

    def __init__(
        self,
        reduction="sum_over_batch_size",
        name="reconstruction_loss",
        dtype=None,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        y_true = ops.cast(y_true, "float32")
        errors = ops.square(y_true - ops.reshape(y_pred, ops.shape(y_true)))
        return ops.sum(ops.reshape(errors, (ops.shape(errors)[0], -1)), -1)
