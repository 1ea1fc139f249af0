"""Induced set attention blocks (Lee et al., 2019, eqs. 9-10)."""

import keras

from keras_capsules.layers import validation
from keras_capsules.layers.multihead_attention_block import (
    MultiheadAttentionBlock,
)


@keras.saving.register_keras_serializable(package="keras_capsules")
class InducedSetAttention(keras.layers.Layer):
    """`ISAB(X) = MAB(X, MAB(I, X))` with `m` learned inducing points `I`:
    permutation-equivariant self-attention over a set in `O(n m)`.

    Smith et al. (2020, section 4) infer the top capsules from the
    template capsules with 4 of these (32 inducing points, 4 heads,
    128 features).

    Args:
        num_inducing_points: int, `m`. Defaults to 32.
        num_heads: int. Defaults to 4.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(batch, n, dim)` set elements; `dim` divisible by
            `num_heads`.
        mask: optional boolean `(batch, n)`: padded elements are ignored
            (and their outputs are meaningless).

    Returns:
        `(batch, n, dim)`.

    Examples:

        >>> layer = InducedSetAttention(num_inducing_points=4, num_heads=2)
        >>> tuple(layer(np.ones((2, 10, 8))).shape)
        (2, 10, 8)
    """

    def __init__(self, num_inducing_points=32, num_heads=4, **kwargs):
        super().__init__(**kwargs)
        self.num_inducing_points = num_inducing_points
        self.num_heads = num_heads
        validation.check_positive_ints(
            self, ["num_inducing_points", "num_heads"]
        )
        self.supports_masking = True

    def build(self, input_shape):
        _, _, dim = validation.capsule_shape(
            self, input_shape, allow_unknown_count=True
        )
        self.inducing_points = self.add_weight(
            name="inducing_points",
            shape=(self.num_inducing_points, dim),
            initializer="glorot_uniform",
        )
        inducing_shape = (None, self.num_inducing_points, dim)
        self.summarise = MultiheadAttentionBlock(
            self.num_heads, dtype=self.dtype_policy, name="summarise"
        )
        self.summarise.build(inducing_shape, input_shape)
        self.broadcast = MultiheadAttentionBlock(
            self.num_heads, dtype=self.dtype_policy, name="broadcast"
        )
        self.broadcast.build(input_shape, inducing_shape)

    def call(self, inputs, mask=None):
        summary = self.summarise(
            keras.ops.cast(self.inducing_points, self.compute_dtype),
            inputs,
            key_mask=mask,
        )
        return self.broadcast(inputs, summary)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "num_inducing_points": self.num_inducing_points,
            "num_heads": self.num_heads,
        }
