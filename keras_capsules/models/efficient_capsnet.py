"""Efficient-CapsNet (Mazzia, Salvetti, Chiaberge 2021): a small
convolutional stem, depthwise primary capsules and self-attention
routing, with CapsNet's decoder and losses."""

import dataclasses

import keras

from keras_capsules import layers
from keras_capsules.models.capsnet import CapsNet
from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.settings import Settings


@dataclasses.dataclass(frozen=True)
class EfficientCapsNetConfig(Settings):
    """Efficient-CapsNet's settings; the defaults are the paper's MNIST
    model (161,824 weights without the decoder, as the authors' model).

    Args:
        conv_filters: channels of the stem's 5x5 then three 3x3 ReLU
            convolutions ((32, 64, 64, 128)), each followed by batch
            normalisation; the last has strides 2.
        primary_kernel_size: int, the depthwise convolution's window (9).
        primary_capsule_dim: int, size of each primary capsule (8).
        capsule_dim: int, size of each class capsule (16).
        decoder_units: hidden layer sizes of the decoder ((512, 1024)).
        reconstruction_weight: float, the weight of the summed squared
            pixel error (0.0005: the authors' 0.392 on the mean over 784
            pixels); 0 trains without it.

    Examples:

        >>> EfficientCapsNetConfig().conv_filters
        (32, 64, 64, 128)
    """

    KIND = "Efficient-CapsNet"
    conv_filters: tuple = (32, 64, 64, 128)
    primary_kernel_size: int = 9
    primary_capsule_dim: int = 8
    capsule_dim: int = 16
    decoder_units: tuple = (512, 1024)
    reconstruction_weight: float = 0.0005

    def __post_init__(self):
        self._check_positive_ints(
            "primary_kernel_size", "primary_capsule_dim", "capsule_dim"
        )
        for name in ("conv_filters", "decoder_units"):
            sizes = tuple(
                positive_int("EfficientCapsNetConfig", name, size)
                for size in getattr(self, name)
            )
            object.__setattr__(self, name, sizes)
        if len(self.conv_filters) != 4:
            raise ValueError(
                "`EfficientCapsNetConfig` expects 4 `conv_filters` (the "
                "5x5 and three 3x3 convolutions). Received: "
                f"{self.conv_filters!r}."
            )
        if not float(self.reconstruction_weight) >= 0:
            raise ValueError(
                "`EfficientCapsNetConfig` expects `reconstruction_weight` "
                f">= 0 (0: no decoder loss). Received: "
                f"{self.reconstruction_weight!r}."
            )

    def get_config(self):
        """The settings as a dict of plain values."""
        config = dataclasses.asdict(self)
        return {
            **config,
            "conv_filters": list(self.conv_filters),
            "decoder_units": list(self.decoder_units),
        }


EfficientCapsNetConfig.PRESETS = {"paper": EfficientCapsNetConfig()}


def efficient_capsnet_layers(config):
    """The stem (a `keras.Sequential` of convolutions and batch
    normalisation) and the `EfficientPrimaryCapsules`."""
    stem = []
    for index, (filters, size, strides) in enumerate(
        zip(config.conv_filters, (5, 3, 3, 3), (1, 1, 1, 2))
    ):
        stem += [
            keras.layers.Conv2D(
                filters,
                size,
                strides=strides,
                activation="relu",
                kernel_initializer="he_normal",
                name=f"conv{index + 1}",
            ),
            keras.layers.BatchNormalization(name=f"norm{index + 1}"),
        ]
    primary_capsules = layers.EfficientPrimaryCapsules(
        config.primary_capsule_dim,
        kernel_size=config.primary_kernel_size,
        name="primary_capsules",
    )
    return keras.Sequential(stem, name="stem"), primary_capsules


@keras.saving.register_keras_serializable(package="keras_capsules")
class EfficientCapsNet(CapsNet):
    """Efficient-CapsNet (Mazzia et al. 2021) for any image shape.

    Stem (four ReLU convolutions with batch normalisation) ->
    `EfficientPrimaryCapsules` -> `SelfAttentionRouting` class capsules
    -> `CapsuleLength`, with `CapsNet`'s decoder from the masked class
    capsules, margin loss and reconstruction loss: a `CapsNet` whose
    capsule layers are the paper's. At 28x28 the stem gives 9x9 maps of
    128 channels, and the primary stage 16 capsules of 8.

    Args:
        image_shape: `(H, W, C)` of the input images, values in [0, 1].
        num_classes: int, class capsules.
        config: an `EfficientCapsNetConfig`, `"paper"` or None for the
            paper's.
        **kwargs: base model arguments (`name`).

    Examples:

        >>> model = EfficientCapsNet((28, 28, 1), 10)
        >>> tuple(model(np.zeros((2, 28, 28, 1))).shape)
        (2, 10)
    """

    CONFIG = EfficientCapsNetConfig

    @staticmethod
    def _capsule_layers(config, num_classes):
        stem, primary_capsules = efficient_capsnet_layers(config)
        class_capsules = layers.SelfAttentionRouting(
            num_classes, config.capsule_dim, name="class_capsules"
        )
        return stem, primary_capsules, class_capsules


def efficient_capsnet(
    image_shape=(28, 28, 1), num_classes=10, config=None, **kwargs
):
    """Returns a built `EfficientCapsNet`; the arguments are its.

    Examples:

        >>> model = efficient_capsnet()
        >>> model.compile(optimizer="adam", metrics=["accuracy"])
        >>> capsule_weights = sum(
        ...     int(np.prod(w.shape)) for w in model.trainable_weights
        ...     if "decoder" not in w.path)
        >>> capsule_weights  # the paper's 161K
        161824
    """
    model = EfficientCapsNet(image_shape, num_classes, config, **kwargs)
    model.build((None, *model.image_shape))
    model(keras.KerasTensor((None, *model.image_shape)))
    return model


def efficient_capsnet_backbone(
    image_shape=(28, 28, 1), config=None, name="efficient_capsnet_backbone"
):
    """Returns Efficient-CapsNet's backbone (stem and primary capsules),
    which any routing head takes (`capsule_classifier(backbone=...)`).

    Returns:
        A `keras.Model` from images to the primary capsules in the capsule
        contract: `[logits (batch, n), poses (batch, n, 1, dim)]`.

    Examples:

        >>> logits, poses = efficient_capsnet_backbone()(
        ...     np.zeros((2, 28, 28, 1)))
        >>> tuple(poses.shape)
        (2, 16, 1, 8)
    """
    stem, primary_capsules = efficient_capsnet_layers(
        EfficientCapsNetConfig.get(config)
    )
    images = keras.Input(image_shape, name="images")
    return keras.Model(images, primary_capsules(stem(images)), name=name)
