"""Pooling by multihead attention (Lee et al., 2019, eq. 11)."""

import keras

from keras_capsules.layers import validation
from keras_capsules.layers.multihead_attention_block import (
    MultiheadAttentionBlock,
)


@keras.saving.register_keras_serializable(package="keras_capsules")
class PoolingByMultiheadAttention(keras.layers.Layer):
    """`PMA(Z) = MAB(S, rFF(Z))`: `k` learned seed vectors `S` attend to a
    set, giving `k` permutation-invariant summaries.

    Args:
        num_seeds: int, `k`. Defaults to 1.
        num_heads: int. Defaults to 4.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(batch, n, dim)`, `dim` divisible by `num_heads`.
        mask: optional boolean `(batch, n)`; padded elements are ignored.

    Returns:
        `(batch, k, dim)`.

    Examples:

        >>> layer = PoolingByMultiheadAttention(num_seeds=3, num_heads=2)
        >>> tuple(layer(np.ones((2, 10, 8))).shape)
        (2, 3, 8)
    """

    def __init__(self, num_seeds=1, num_heads=4, **kwargs):
        super().__init__(**kwargs)
        self.num_seeds = num_seeds
        self.num_heads = num_heads
        validation.check_positive_ints(self, ["num_seeds", "num_heads"])
        self.supports_masking = True

    def build(self, input_shape):
        _, _, dim = validation.capsule_shape(
            self, input_shape, allow_unknown_count=True
        )
        self.seeds = self.add_weight(
            name="seeds",
            shape=(self.num_seeds, dim),
            initializer="glorot_uniform",
        )
        self.feedforward = keras.layers.Dense(
            dim, activation="relu", dtype=self.dtype_policy, name="feedforward"
        )
        self.feedforward.build(input_shape)
        self.pool = MultiheadAttentionBlock(
            self.num_heads, dtype=self.dtype_policy, name="pool"
        )
        self.pool.build((None, self.num_seeds, dim), input_shape)

    def call(self, inputs, mask=None):
        return self.pool(
            keras.ops.cast(self.seeds, self.compute_dtype),
            self.feedforward(inputs),
            key_mask=mask,
        )

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_seeds, input_shape[-1])

    def get_config(self):
        return {
            **super().get_config(),
            "num_seeds": self.num_seeds,
            "num_heads": self.num_heads,
        }
