"""Primary capsules from a depthwise convolution (Mazzia, Salvetti,
Chiaberge 2021, Efficient-CapsNet)."""

import keras
from keras import ops

from keras_capsules.layers import validation
from keras_capsules.ops.squash import exponential_squash, squashed_length_logit


@keras.saving.register_keras_serializable(package="keras_capsules")
class EfficientPrimaryCapsules(keras.layers.Layer):
    """Efficient-CapsNet's primary capsules: a depthwise convolution whose
    outputs, grouped `capsule_dim` at a time, are capsules.

    Each channel is convolved with its own `kernel_size x kernel_size`
    window ("valid" padding, with a bias), and the outputs `(H', W', C)`
    are read as `H' W' C / capsule_dim` vectors `s_n`, exponentially
    squashed (`ops.exponential_squash`). At the paper's sizes (9x9 maps of
    128 channels, kernel 9) that is 16 capsules of 8. The output speaks
    the capsule contract: `[logits, poses]` with the poses the squashed
    vectors `v_n` as `1 x capsule_dim` matrices and the logits those of
    their lengths, so a routing layer's `u_n = sigmoid(logit_n) P_n /
    |P_n|` is `v_n` itself.

    Args:
        capsule_dim: int, the size of each capsule; it must divide `H' W'
            C`.
        kernel_size: int, the depthwise convolution's window. Defaults to
            `9`.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `(batch, H, W, C)` feature maps.

    Returns:
        `[logits (batch, n), poses (batch, n, 1, capsule_dim)]`.

    Examples:

        >>> layer = EfficientPrimaryCapsules(capsule_dim=8)
        >>> logits, poses = layer(np.zeros((2, 9, 9, 128)))
        >>> tuple(poses.shape)
        (2, 16, 1, 8)
    """

    def __init__(self, capsule_dim, kernel_size=9, **kwargs):
        super().__init__(**kwargs)
        self.capsule_dim = capsule_dim
        self.kernel_size = kernel_size
        validation.check_positive_ints(self, ["capsule_dim", "kernel_size"])
        self.convolution = keras.layers.DepthwiseConv2D(
            kernel_size, padding="valid", name="depthwise_convolution"
        )

    def _num_capsules(self, input_shape):
        _, height, width, channels = self.convolution.compute_output_shape(
            input_shape
        )
        size = height * width * channels
        if size % self.capsule_dim:
            raise ValueError(
                f"`{self.name}` expects the depthwise convolution's outputs "
                f"(H', W', C) = {(height, width, channels)} to divide into "
                f"capsules of capsule_dim={self.capsule_dim}. Received "
                f"inputs of shape {tuple(input_shape)}. Pass a capsule_dim "
                f"that divides {size}."
            )
        return size // self.capsule_dim

    def build(self, input_shape):
        if len(input_shape) != 4 or None in input_shape[1:]:
            raise ValueError(
                f"`{self.name}` expects feature maps (batch, H, W, C) of "
                f"known size. Received: {tuple(input_shape)}."
            )
        self.convolution.build(input_shape)
        self._num_capsules(input_shape)

    def call(self, inputs):
        features = self.convolution(inputs)
        num_capsules = self._num_capsules(inputs.shape)
        vectors = ops.reshape(
            features, (-1, num_capsules, 1, self.capsule_dim)
        )  # s_n
        capsules = exponential_squash(vectors)  # v_n
        return [squashed_length_logit(capsules, axis=(-2, -1)), capsules]

    def compute_output_shape(self, input_shape):
        batch, count = input_shape[0], self._num_capsules(input_shape)
        return [(batch, count), (batch, count, 1, self.capsule_dim)]

    def get_config(self):
        return {
            **super().get_config(),
            "capsule_dim": self.capsule_dim,
            "kernel_size": self.kernel_size,
        }
