"""Picks the capsules the reconstruction decoder sees (Sabour sec. 4.1)."""

import keras
from keras import ops

from keras_capsules.ops.squash import safe_norm


@keras.saving.register_keras_serializable(package="keras_capsules")
class CapsuleMask(keras.layers.Layer):
    """Zeroes every capsule but the selected ones, for the decoder.

    CapsNet's decoder reconstructs the input from the capsule of the true
    class while training and from the longest capsule otherwise. Called with
    `[capsules, labels]` and `training=True`, the layer keeps the labelled
    capsules; otherwise (no labels, or not training) it keeps the longest.
    Labels are class ids `(batch,)` or one-hot / multi-hot `(batch, n)`
    weights (MultiMNIST keeps two capsules).

    Args:
        always_use_labels: bool, keep the labelled capsules whenever labels
            are given, also when not training (e.g. to reconstruct each of
            two overlapping digits). Defaults to `False`.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(batch, n, d)` capsules, or `[capsules, labels]`.
        training: bool, whether the model is training.

    Returns:
        `(batch, n, d)`: the kept capsules, zeros elsewhere.

    Examples:

        >>> capsules = np.array([[[0.1, 0.0], [0.0, 0.9]]])
        >>> ops.convert_to_numpy(CapsuleMask()(capsules))  # keeps the longest
        array([[[0. , 0. ],
            [0. , 0.9]]], dtype=float32)
        >>> ops.convert_to_numpy(
        ...     CapsuleMask()([capsules, np.array([0])], training=True))
        array([[[0.1, 0. ],
            [0. , 0. ]]], dtype=float32)
    """

    def __init__(self, always_use_labels=False, **kwargs):
        super().__init__(**kwargs)
        self.always_use_labels = bool(always_use_labels)

    def call(self, inputs, training=None):
        labels = None
        if isinstance(inputs, (list, tuple)):
            capsules, labels = inputs
        else:
            capsules = inputs
        num_capsules = capsules.shape[-2]
        if labels is not None and (training or self.always_use_labels):
            labels = ops.convert_to_tensor(labels)
            if labels.ndim == capsules.ndim - 2:  # Class ids.
                selection = ops.one_hot(ops.cast(labels, "int32"), num_capsules)
            else:
                selection = labels
        else:
            longest = ops.argmax(safe_norm(capsules, axis=-1), axis=-1)
            selection = ops.one_hot(longest, num_capsules)
        return capsules * ops.cast(selection, capsules.dtype)[..., None]

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and isinstance(
            input_shape[0], (list, tuple)
        ):
            return tuple(input_shape[0])
        return tuple(input_shape)

    def get_config(self):
        return {
            **super().get_config(),
            "always_use_labels": self.always_use_labels,
        }
