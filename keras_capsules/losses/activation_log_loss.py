"""`ActivationLogLoss`: the negative log of the true class capsule's
activation (self-routing's loss, Hahn et al. 2019)."""

import keras
from keras import ops

from keras_capsules.losses.class_capsule_loss import ClassCapsuleLoss
from keras_capsules.losses.class_targets import class_targets

# Held below log(activation) when activations (not logits) are given: an
# activation of 0 costs -log(1e-7), not infinity.
_LEAST_ACTIVATION = 1e-7


@keras.saving.register_keras_serializable(package="keras_capsules")
class ActivationLogLoss(ClassCapsuleLoss):
    """`-log a_y`, the negative log of the true class's activation.

    Self-routing's class activations sum to 1 over the classes (each
    child's routing weights do), so the authors train them with the
    negative log-likelihood of the true class: this loss. On logits
    (`from_logits=True`) it is `-log sigmoid(logit_y)`, exact for any
    logit. `y_true` holds class ids `(batch,)` or one-hot `(batch, n)`
    targets (a multi-hot target sums the present classes' terms).

    Args:
        name: the loss's name.
        **kwargs: `from_logits`, `reduction` and `dtype`, as for
            `ClassCapsuleLoss`.

    Examples:

        >>> loss = ActivationLogLoss()
        >>> round(float(loss(np.array([1]), np.array([[0.5, 0.25]]))), 4)
        1.3863
        >>> loss = ActivationLogLoss(from_logits=True)
        >>> round(float(loss(np.array([0]), np.zeros((1, 2)))), 4)  # log 2
        0.6931
    """

    def __init__(self, name="activation_log_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_pred = ops.cast(y_pred, "float32")
        targets = class_targets("ActivationLogLoss", y_true, y_pred.shape[-1])
        if self.from_logits:
            log_activation = ops.log_sigmoid(y_pred)
        else:
            log_activation = ops.log(ops.maximum(y_pred, _LEAST_ACTIVATION))
        return -ops.sum(targets * log_activation, axis=-1)
