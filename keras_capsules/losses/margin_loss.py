"""`MarginLoss`: Keras loss around `ops.margin_loss` (Sabour et al. eq. 4)."""

import keras

from keras_capsules.losses.class_capsule_loss import ClassCapsuleLoss
from keras_capsules.losses.class_targets import class_targets
from keras_capsules.ops.margin_loss import margin_loss


@keras.saving.register_keras_serializable(package="keras_capsules")
class MarginLoss(ClassCapsuleLoss):
    """CapsNet's margin loss on capsule lengths (Sabour et al., eq. 4).

    `y_true` holds class ids `(batch,)` or one-hot / multi-hot
    `(batch, n)` targets (several present classes, as in MultiMNIST);
    `y_pred` holds the capsule lengths `(batch, n)`. Each example's loss is
    summed over classes; `reduction` then averages over the batch. A bad
    label (an id out of range or fractional, a target other than 0 or 1)
    raises, except under XLA, where the check is compiled out
    (`class_targets`).

    Args:
        positive_margin: float `m+`, the length a present class should
            exceed. Defaults to `0.9`.
        negative_margin: float `m-`, the length an absent class should stay
            below. Defaults to `0.1`.
        negative_weight: float `lambda`, the weight of absent classes.
            Defaults to `0.5`.
        name: the loss's name.
        **kwargs: `from_logits`, `reduction` and `dtype`, as for
            `ClassCapsuleLoss`.

    Examples:

        >>> loss = MarginLoss()
        >>> float(loss(np.array([0]), np.array([[0.95, 0.05]])))  # margins met
        0.0
        >>> from_logits = MarginLoss(from_logits=True)
        >>> round(float(from_logits(np.array([0]), np.zeros((1, 2)))), 4)
        0.24
    """

    def __init__(
        self,
        positive_margin=0.9,
        negative_margin=0.1,
        negative_weight=0.5,
        name="margin_loss",
        **kwargs,
    ):
        super().__init__(name=name, **kwargs)
        self.positive_margin = float(positive_margin)
        self.negative_margin = float(negative_margin)
        self.negative_weight = float(negative_weight)

    def call(self, y_true, y_pred):
        y_pred = self.activations(y_pred)
        targets = class_targets("MarginLoss", y_true, y_pred.shape[-1])
        return margin_loss(
            targets,
            y_pred,
            self.positive_margin,
            self.negative_margin,
            self.negative_weight,
        )

    def get_config(self):
        return {
            **super().get_config(),
            "positive_margin": self.positive_margin,
            "negative_margin": self.negative_margin,
            "negative_weight": self.negative_weight,
        }
