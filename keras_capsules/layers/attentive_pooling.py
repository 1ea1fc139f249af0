"""Attentive pooling of a feature map into capsules (Kosiorek et al., 2019)."""

import keras
from keras import ops

from keras_capsules.layers import validation


@keras.saving.register_keras_serializable(package="keras_capsules")
class AttentivePooling(keras.layers.Layer):
    """Pools a feature map into `num_capsules` vectors, one attention map
    each (the part encoder of stacked capsule autoencoders, used by Smith
    et al., 2020, section 4, for the template capsules).

    A 1x1 convolution gives every position, for every capsule `n`, a
    feature vector `f[p, n]` and an attention logit `l[p, n]`; capsule `n`
    is `sum_p softmax_p(l[p, n]) f[p, n]`.

    Args:
        num_capsules: int, number of capsules `n`.
        capsule_dim: int, size `d` of each pooled vector.
        **kwargs: base layer arguments.

    Call arguments:
        inputs: `(batch, H, W, channels)` feature map.

    Returns:
        `(batch, n, d)`.

    Examples:

        >>> capsules = AttentivePooling(num_capsules=8, capsule_dim=4)(
        ...     np.ones((2, 6, 6, 16)))
        >>> tuple(capsules.shape)
        (2, 8, 4)
    """

    def __init__(self, num_capsules, capsule_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_capsules = num_capsules
        self.capsule_dim = capsule_dim
        validation.check_positive_ints(self, ["num_capsules", "capsule_dim"])

    def build(self, input_shape):
        _, _, _, channels = validation.image_shape(self, input_shape)
        self.kernel = self.add_weight(  # (channels, n, d + 1)
            name="kernel",
            shape=(channels, self.num_capsules, self.capsule_dim + 1),
            initializer="glorot_uniform",
        )
        self.bias = self.add_weight(
            name="bias",
            shape=(self.num_capsules, self.capsule_dim + 1),
            initializer="zeros",
        )

    def call(self, inputs):
        inputs = ops.cast(inputs, self.compute_dtype)
        batch = ops.shape(inputs)[0]
        flat = ops.reshape(inputs, (batch, -1, ops.shape(inputs)[-1]))
        heads = ops.einsum("bpf,fnd->bpnd", flat, self.kernel) + self.bias
        features, logits = heads[..., :-1], heads[..., -1]
        # Attention over positions in float32: half-precision softmax over
        # hundreds of positions loses the small weights.
        attention = ops.softmax(ops.cast(logits, "float32"), axis=1)
        pooled = ops.einsum(
            "bpn,bpnd->bnd", attention, ops.cast(features, "float32")
        )
        return ops.cast(pooled, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_capsules, self.capsule_dim)

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsules": self.num_capsules,
            "capsule_dim": self.capsule_dim,
        }
