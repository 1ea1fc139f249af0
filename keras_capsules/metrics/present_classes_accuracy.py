"""Accuracy when several classes are present (Sabour et al. sec. 6)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_capsules")
class PresentClassesAccuracy(keras.metrics.MeanMetricWrapper):
    """Fraction of examples whose k highest scores are exactly their k
    present classes (MultiMNIST: k = 2, both digits right).

    `y_true` holds multi-hot targets `(batch, n)` with k ones each;
    `y_pred` holds scores `(batch, n)` such as capsule lengths.

    Examples:

        >>> metric = PresentClassesAccuracy()
        >>> metric.update_state(np.array([[1, 1, 0], [1, 1, 0]]),
        ...                     np.array([[0.9, 0.8, 0.1], [0.9, 0.1, 0.8]]))
        >>> float(metric.result())
        0.5
    """

    def __init__(self, name="present_classes_accuracy", dtype=None):
        super().__init__(_present_classes_correct, name=name, dtype=dtype)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


def _present_classes_correct(y_true, y_pred):
    y_true = ops.cast(y_true, "float32")
    y_pred = ops.cast(y_pred, "float32")
    present = ops.sum(y_true, axis=-1, keepdims=True)  # k per example.
    # The rank of each score among its row: 0 for the highest.
    ranks = ops.sum(
        ops.cast(y_pred[:, None, :] > y_pred[:, :, None], "float32"), axis=-1
    )
    predicted = ops.cast(ranks < present, "float32")
    return ops.cast(ops.all(predicted == y_true, axis=-1), "float32")
