"""Capsules on a grid as a list of capsules."""

import math

import keras

from keras_capsules.layers import contract
from keras_capsules.layers.masks import combined_input_mask


@keras.saving.register_keras_serializable(package="keras_capsules")
class FlattenCapsules(keras.layers.Layer):
    """Turns a grid of capsules into a list, in the capsule contract (see
    `CapsuleRouting`): `[logits (batch, H, W, B), poses (batch, H, W, B,
    d_cov, d)]` to `[logits (batch, n), poses (batch, n, d_cov, d)]`, `n =
    H W B`, ordered by row, column and type; a mask follows them. A
    routing layer after it has weights per capsule where, given the grid,
    it might share them across positions (`MatrixCapsuleEMRouting`).

    Call arguments:
        inputs: `[logits, poses]` on a grid.
        mask: optional bool `(batch, H, W, B)`.

    Returns:
        `[logits, poses]` as a list of capsules.

    Examples:

        >>> logits, poses = FlattenCapsules()([np.zeros((2, 3, 3, 4)),
        ...                                    np.zeros((2, 3, 3, 4, 4, 4))])
        >>> tuple(poses.shape)
        (2, 36, 4, 4)
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        logits, poses, _ = contract.as_list(*inputs, None)
        return [logits, poses]

    def compute_mask(self, inputs, mask=None):
        mask = combined_input_mask(mask)
        if mask is None:
            return None
        _, _, mask = contract.as_list(*inputs, mask)
        return [mask, mask]

    def compute_output_shape(self, input_shape):
        (batch, *grid), poses = input_shape
        count = None if None in grid else math.prod(grid)
        return [(batch, count), (batch, count, *poses[-2:])]
