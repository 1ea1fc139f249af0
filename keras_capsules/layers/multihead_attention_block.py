"""The multihead attention block of set transformers (Lee et al., 2019)."""

import keras
from keras import ops


class MultiheadAttentionBlock(keras.layers.Layer):
    """`MAB(X, Y) = LN(H + rFF(H))`, `H = LN(X + Multihead(X, Y, Y))`
    (Lee et al., 2019, eq. 6), the block that `InducedSetAttention` and
    `PoolingByMultiheadAttention` are built from.

    Args:
        num_heads: int, attention heads.
        **kwargs: base layer arguments.

    Call arguments:
        queries: `(batch, m, dim)` (or `(m, dim)`, shared by the batch).
        keys: `(batch, n, dim_y)`.
        key_mask: optional boolean `(batch, n)`; False keys are ignored.

    Returns:
        `(batch, m, dim)`.
    """

    def __init__(self, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads

    def build(self, queries_shape, keys_shape):
        dim = queries_shape[-1]
        if dim % self.num_heads:
            raise ValueError(
                f"`{self.name}` splits its {dim} features over "
                f"{self.num_heads} heads, which must divide them. Choose a "
                "feature size that is a multiple of `num_heads`."
            )
        query_shape = (None, *tuple(queries_shape)[-2:])
        self.attention = keras.layers.MultiHeadAttention(
            self.num_heads,
            dim // self.num_heads,
            dtype=self.dtype_policy,
            name="attention",
        )
        self.attention.build(query_shape, keys_shape)
        self.feedforward = keras.layers.Dense(
            dim, activation="relu", dtype=self.dtype_policy, name="feedforward"
        )
        self.feedforward.build(query_shape)
        self.attention_norm = keras.layers.LayerNormalization(
            dtype=self.dtype_policy, name="attention_norm"
        )
        self.attention_norm.build(query_shape)
        self.output_norm = keras.layers.LayerNormalization(
            dtype=self.dtype_policy, name="output_norm"
        )
        self.output_norm.build(query_shape)

    def call(self, queries, keys, key_mask=None):
        if len(queries.shape) == 2:  # learned points shared by the batch
            queries = ops.broadcast_to(
                queries[None], (ops.shape(keys)[0], *queries.shape)
            )
        attention_mask = None
        if key_mask is not None:
            attention_mask = ops.broadcast_to(
                ops.cast(key_mask, "bool")[:, None, :],
                (
                    ops.shape(queries)[0],
                    ops.shape(queries)[1],
                    ops.shape(keys)[1],
                ),
            )
        hidden = self.attention_norm(
            queries
            + self.attention(queries, keys, attention_mask=attention_mask)
        )
        return self.output_norm(hidden + self.feedforward(hidden))

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads}
