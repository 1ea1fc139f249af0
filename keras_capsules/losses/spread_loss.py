"""`SpreadLoss`: Keras loss around `ops.spread_loss` (Hinton et al. 2018,
eq. 3)."""

import keras
from keras import ops

from keras_capsules.losses.class_capsule_loss import ClassCapsuleLoss
from keras_capsules.losses.class_targets import class_targets
from keras_capsules.ops.spread_loss import spread_loss


@keras.saving.register_keras_serializable(package="keras_capsules")
class SpreadLoss(ClassCapsuleLoss):
    """The spread loss of matrix capsules (Hinton, Sabour, Frosst 2018).

    Penalises every wrong class whose activation comes closer than the
    margin `m` to the target's: `sum_{i != t} max(0, m - (a_t - a_i))^2`.
    `y_true` holds class ids `(batch,)` or one-hot `(batch, n)`; `y_pred`
    the class activations `(batch, n)`. A bad label (an id out of range or
    fractional, a multi-hot row) raises, except under XLA, where the
    check is compiled out (`class_targets`). The margin is a non-trainable
    variable, `margin`, so `callbacks.SpreadLossMargin` can raise it from
    0.2 to 0.9 during training, as in the paper.

    Args:
        margin: float, the starting margin `m`. Defaults to `0.2`.
        name: the loss's name.
        **kwargs: `from_logits`, `reduction` and `dtype`, as for
            `ClassCapsuleLoss`.

    Examples:

        >>> loss = SpreadLoss(margin=0.2)
        >>> round(float(loss(np.array([0]), np.array([[0.9, 0.8, 0.1]]))), 4)
        0.01
    """

    def __init__(
        self,
        margin=0.2,
        name="spread_loss",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        self.margin = keras.Variable(
            float(margin), trainable=False, dtype="float32", name="margin"
        )

    def call(self, y_true, y_pred):
        y_pred = self.activations(y_pred)
        targets = class_targets(
            "SpreadLoss", y_true, y_pred.shape[-1], multi_hot=False
        )
        return spread_loss(targets, y_pred, self.margin)

    def get_config(self):
        return {
            **super().get_config(),
            "margin": float(ops.convert_to_numpy(self.margin)),
        }
