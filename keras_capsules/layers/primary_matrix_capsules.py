"""Matrix capsules from feature maps (Hinton, Sabour, Frosst 2018, sec. 4)."""

import keras
from keras import ops

from keras_capsules.layers import contract, kernel_arguments, validation


@keras.saving.register_keras_serializable(package="keras_capsules")
class PrimaryMatrixCapsules(keras.layers.Layer):
    """A convolution whose outputs are matrix capsules: 4x4 poses and
    activations.

    The paper's PrimaryCaps: at each position, the pose of each of the `B`
    capsule types is a linear function of the feature vectors in the
    window (`kernel_size`, 1x1 in the paper), and its activation the
    logistic of another linear function of them. The capsules come in the
    capsule contract on a grid (see `CapsuleRouting`): the activations'
    logits and the poses.

    Args:
        num_capsule_types: int `B`, capsule types per position (paper: 32).
        kernel_size: int or pair. Defaults to `1`.
        strides: int or pair. Defaults to `1`.
        padding: `"valid"` or `"same"`. Defaults to `"valid"`.
        kernel_initializer: initializer of both convolution kernels.
        activation_bias_initializer: initializer of the activation
            convolution's bias, the logit of every activation before
            training. Defaults to `"zeros"`.
        kernel_regularizer: optional regularizer of both kernels.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `(batch, H, W, C)` feature maps.

    Returns:
        `[logits, poses]`: `(batch, H', W', B)` activation logits and
        `(batch, H', W', B, 4, 4)` poses.

    Examples:

        >>> logits, poses = PrimaryMatrixCapsules(8)(np.zeros((2, 6, 6, 3)))
        >>> tuple(poses.shape)
        (2, 6, 6, 8, 4, 4)
    """

    def __init__(
        self,
        num_capsule_types,
        kernel_size=1,
        strides=1,
        padding="valid",
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        activation_bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsule_types = num_capsule_types
        validation.check_positive_ints(self, ["num_capsule_types"])
        validation.set_window(self, kernel_size, strides, padding)
        kernel_arguments.set_kernel_arguments(
            self, kernel_initializer, kernel_regularizer
        )
        self.activation_bias_initializer = keras.initializers.get(
            activation_bias_initializer
        )
        self.pose_convolution = self._convolution(
            16, "pose_convolution", "zeros"
        )
        self.activation_convolution = self._convolution(
            1, "activation_convolution", self.activation_bias_initializer
        )

    def _convolution(self, channels_per_type, name, bias_initializer):
        return keras.layers.Conv2D(
            self.num_capsule_types * channels_per_type,
            self.kernel_size,
            strides=self.strides,
            padding=self.padding,
            kernel_initializer=self.kernel_initializer,
            kernel_regularizer=self.kernel_regularizer,
            bias_initializer=bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    @classmethod
    def from_config(cls, config):
        return contract.from_config(cls, config)

    def build(self, input_shape):
        validation.image_shape(self, input_shape)
        self.pose_convolution.build(input_shape)
        self.activation_convolution.build(input_shape)

    def call(self, inputs):
        poses = self.pose_convolution(inputs)  # (b, H', W', B * 16)
        grid = ops.shape(poses)[:3]
        poses = ops.reshape(poses, (*grid, self.num_capsule_types, 4, 4))
        return [self.activation_convolution(inputs), poses]

    def compute_output_shape(self, input_shape):
        grid = self.activation_convolution.compute_output_shape(input_shape)
        return [grid, (*grid, 4, 4)]

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsule_types": self.num_capsule_types,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            **kernel_arguments.kernel_config(self),
            "activation_bias_initializer": keras.initializers.serialize(
                self.activation_bias_initializer
            ),
            **contract.MARKER,
        }
