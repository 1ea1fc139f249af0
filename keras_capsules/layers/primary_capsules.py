"""Convolutional capsules from feature maps (Sabour et al. 2017, sec. 4)."""

import keras
import numpy as np
from keras import ops

from keras_capsules.layers import contract, kernel_arguments, validation
from keras_capsules.ops.spectral_convolution import (
    spectral_conv2d,
    spectral_is_cheaper,
)
from keras_capsules.ops.squash import squash, squashed_length_logit

_ALGORITHMS = ("auto", "direct", "spectral")


@keras.saving.register_keras_serializable(package="keras_capsules")
class PrimaryCapsules(keras.layers.Layer):
    """A convolution whose output channels are grouped into squashed capsules.

    CapsNet's PrimaryCaps: a convolution to `num_capsule_types * capsule_dim`
    channels; at each position each group of `capsule_dim` consecutive
    channels is one capsule, squashed (eq. 1). The capsule grid is flattened
    to `n = H' * W' * num_capsule_types` capsules (ordered by row, column,
    type), so the image size may vary when the next layer allows it. The
    capsules come in the capsule contract (see `CapsuleRouting`): their
    length's logit `2 log |s|` (`|v| = sigmoid(2 log |s|)`) and the
    squashed vector as a `1 x capsule_dim` pose.

    Args:
        num_capsule_types: int, capsule types per position (the paper: 32).
        capsule_dim: int, size of each capsule (the paper: 8).
        kernel_size: int or pair, the convolution window. Defaults to `9`.
        strides: int or pair. Defaults to `2`.
        padding: `"valid"` or `"same"`. Defaults to `"valid"`.
        convolution_algorithm: how the convolution is computed, with the
            same weights either way: `"direct"` (`keras.layers.Conv2D`),
            `"spectral"` (`ops.spectral_conv2d`: products with DFT
            matrices; needs a known image size) or `"auto"`: spectral
            where the image size is known, no GPU or TPU is visible, and
            it takes at most half the direct multiply-adds (CapsNet's 9x9
            PrimaryCaps: 3.5x fewer; forward and backward 3.4x faster on
            a 2-core CPU), else direct. The two agree to float32 rounding.
            Defaults to `"auto"`.
        kernel_initializer: initializer of the convolution kernel.
        kernel_regularizer: optional regularizer of the convolution kernel.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `(batch, H, W, C)` feature maps.

    Returns:
        `[logits, poses]`: `(batch, n)` logits of the capsules' lengths and
        `(batch, n, 1, capsule_dim)` capsules, each of length < 1.

    Examples:

        >>> layer = PrimaryCapsules(num_capsule_types=32, capsule_dim=8)
        >>> logits, capsules = layer(np.zeros((2, 20, 20, 256)))
        >>> tuple(capsules.shape)
        (2, 1152, 1, 8)
    """

    def __init__(
        self,
        num_capsule_types,
        capsule_dim,
        kernel_size=9,
        strides=2,
        padding="valid",
        convolution_algorithm="auto",
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        validation.check_option(
            self, "convolution_algorithm", convolution_algorithm, _ALGORITHMS
        )
        self.convolution_algorithm = convolution_algorithm
        self.num_capsule_types = num_capsule_types
        self.capsule_dim = capsule_dim
        validation.check_positive_ints(
            self, ["num_capsule_types", "capsule_dim"]
        )
        validation.set_window(self, kernel_size, strides, padding)
        kernel_arguments.set_kernel_arguments(
            self, kernel_initializer, kernel_regularizer
        )
        self.convolution = keras.layers.Conv2D(
            num_capsule_types * capsule_dim,
            kernel_size,
            strides=strides,
            padding=padding,
            kernel_initializer=self.kernel_initializer,
            kernel_regularizer=self.kernel_regularizer,
            dtype=self.dtype_policy,
            name="convolution",
        )

    @classmethod
    def from_config(cls, config):
        return contract.from_config(cls, config)

    def build(self, input_shape):
        validation.image_shape(self, input_shape)
        if self.convolution_algorithm == "spectral" and None in tuple(
            input_shape[1:3]
        ):
            raise ValueError(
                f"`{self.name}` with convolution_algorithm='spectral' "
                "expects images of a known size (batch, H, W, C). "
                f"Received: {tuple(input_shape)}. Give the model a fixed "
                "image size, or use convolution_algorithm='auto'."
            )
        self.convolution.build(input_shape)

    def call(self, inputs):
        if self._computes_spectrally(inputs.shape):
            convolution = self.convolution
            features = spectral_conv2d(
                ops.cast(inputs, self.compute_dtype),
                ops.cast(convolution.kernel, self.compute_dtype),
                convolution.strides,
                convolution.padding,
            )
            features = features + ops.cast(convolution.bias, self.compute_dtype)
        else:
            features = self.convolution(inputs)  # (b, H', W', types * dim)
        # The capsule count static where the grid's size is: TFLite's
        # converter lowers the routing's new-axis slices to builtin ops
        # only for shapes known but for the batch.
        grid = features.shape[1:]
        count = -1 if None in grid else int(np.prod(grid)) // self.capsule_dim
        capsules = ops.reshape(
            features, (ops.shape(features)[0], count, self.capsule_dim)
        )
        # Squash in float32: |s|^2 overflows float16 above 256.
        capsules = squash(ops.cast(capsules, "float32"))
        return [
            ops.cast(squashed_length_logit(capsules), self.compute_dtype),
            ops.cast(capsules[:, :, None, :], self.compute_dtype),
        ]

    def _computes_spectrally(self, input_shape):
        """Whether this call takes `spectral_conv2d` (see
        `convolution_algorithm`)."""
        if self.convolution_algorithm != "auto":
            return self.convolution_algorithm == "spectral"
        return _on_cpu_only() and spectral_is_cheaper(
            tuple(input_shape[1:3]),
            tuple(self.convolution.kernel.shape),
            self.convolution.strides,
            self.convolution.padding,
        )

    def compute_output_shape(self, input_shape):
        _, height, width, _ = self.convolution.compute_output_shape(input_shape)
        count = None
        if height is not None and width is not None:
            count = height * width * self.num_capsule_types
        return [
            (input_shape[0], count),
            (input_shape[0], count, 1, self.capsule_dim),
        ]

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsule_types": self.num_capsule_types,
            "capsule_dim": self.capsule_dim,
            "kernel_size": self.kernel_size,
            "strides": self.strides,
            "padding": self.padding,
            "convolution_algorithm": self.convolution_algorithm,
            **kernel_arguments.kernel_config(self),
            **contract.MARKER,
        }


def _on_cpu_only():
    """Whether Keras computes on CPUs only (the distribution API lists the
    devices on TensorFlow and JAX; Keras's PyTorch backend has no such
    list and places each tensor on its one device)."""
    if keras.backend.backend() == "torch":
        return ops.zeros(()).device.type == "cpu"
    return all(
        device.lower().startswith("cpu")
        for device in keras.distribution.list_devices()
    )
