"""The part of each paper's model that turns images into capsules: a
backbone that any routing head can take (`capsule_classifier`)."""

import keras

from keras_capsules import layers
from keras_capsules.models.capsnet_config import CapsNetConfig
from keras_capsules.models.normalization import batch_normalization

# Heinsen's image model: strides of its six 3x3 convolutions.
_HEINSEN_STRIDES = (1, 2, 1, 2, 1, 2)
_INITIALIZATIONS = ("author", "keras")
_PADDINGS = ("same", "valid")
# The paper's model uses PyTorch's batch normalisation, whose running
# statistics move by 0.1 per step: Keras momentum 0.9 (Keras's default,
# 0.99, lags far behind in short runs).
_NORM_MOMENTUM = 0.9


def capsnet_layers(config):
    """CapsNet's convolution and `PrimaryCapsules`, named as in `CapsNet`."""
    convolution = keras.layers.Conv2D(
        config.conv_filters,
        config.conv_kernel_size,
        activation="relu",
        name="conv1",
    )
    primary_capsules = layers.PrimaryCapsules(
        config.primary_capsule_types,
        config.primary_capsule_dim,
        kernel_size=config.primary_kernel_size,
        strides=config.primary_strides,
        convolution_algorithm=config.convolution_algorithm,
        name="primary_capsules",
    )
    return convolution, primary_capsules


def capsnet_backbone(
    image_shape=(28, 28, 1), config=None, name="capsnet_backbone"
):
    """Returns CapsNet's backbone (Sabour et al. 2017, sec. 4): a ReLU
    convolution, then `PrimaryCapsules`.

    Args:
        image_shape: `(H, W, C)`.
        config: a `CapsNetConfig`, one of its preset names or None for the
            paper's; its convolution and primary-capsule sizes are used.
        name: the model's name.

    Returns:
        A `keras.Model` from images to the primary capsules in the capsule
        contract: `[logits (batch, n), poses (batch, n, 1, dim)]`.

    Examples:

        >>> backbone = capsnet_backbone(config="small")
        >>> logits, poses = backbone(np.zeros((2, 28, 28, 1)))
        >>> tuple(poses.shape)  # 6 x 6 positions, 8 types, 8-vectors
        (2, 288, 1, 8)
    """
    convolution, primary_capsules = capsnet_layers(CapsNetConfig.get(config))
    images = keras.Input(image_shape, name="images")
    capsules = primary_capsules(convolution(images))
    return keras.Model(images, capsules, name=name)


def _torch_default_uniform(fan_in):
    """PyTorch's default for a convolution's kernel and bias: uniform in
    `+-1 / sqrt(fan_in)` (its Kaiming-uniform with `a = sqrt(5)`)."""
    limit = fan_in**-0.5
    return keras.initializers.RandomUniform(-limit, limit)


def _convolution_initializers(initialization, fan_in, stem):
    """`(kernel_initializer, bias_initializer)` of one convolution.

    `"author"`, as the author's code (glassroom/heinsen_routing): the six
    3x3 convolutions get Kaiming-normal kernels (fan-in, gain sqrt 2, not
    truncated) and PyTorch's default biases; the two 1x1 convolutions
    PyTorch's defaults for both. `"keras"`: Glorot-uniform kernels and
    zero biases (Keras's defaults).
    """
    if initialization == "keras":
        return "glorot_uniform", "zeros"
    kernel = (
        keras.initializers.VarianceScaling(2.0, "fan_in", "untruncated_normal")
        if stem
        else _torch_default_uniform(fan_in)
    )
    return kernel, _torch_default_uniform(fan_in)


def check_heinsen_options(builder, **values):
    """Raises a `ValueError` for an unknown `initialization` or `padding`."""
    options = {"initialization": _INITIALIZATIONS, "padding": _PADDINGS}
    for argument, value in values.items():
        if value not in options[argument]:
            raise ValueError(
                f"`{builder}` expects `{argument}` to be one of "
                f"{options[argument]}. Received: {argument}={value!r}."
            )


def heinsen_image_capsules(
    images, filters, num_parts, pose_shape, initialization, padding
):
    """Heinsen's backbone applied to the `images` tensor; returns the
    input capsules `[scores (b, n), poses (b, n, d_cov, d)]`. The
    arguments are `heinsen_image_backbone`'s."""
    d_cov, d_pose = pose_shape
    x = layers.CoordinateChannels(name="coordinates")(images)
    channels = images.shape[-1] + 2
    for index, strides in enumerate(_HEINSEN_STRIDES):
        x = batch_normalization(
            momentum=_NORM_MOMENTUM, name=f"norm{index + 1}"
        )(x)
        kernel_init, bias_init = _convolution_initializers(
            initialization, 9 * channels, stem=True
        )
        x = keras.layers.Conv2D(
            filters,
            3,
            strides=strides,
            padding=padding,
            activation="swish",
            kernel_initializer=kernel_init,
            bias_initializer=bias_init,
            name=f"conv{index + 1}",
        )(x)
        channels = filters
    kernel_init, bias_init = _convolution_initializers(
        initialization, filters, stem=False
    )
    outputs = []
    for kind, size, shape in (
        ("score", num_parts, (-1,)),
        ("pose", num_parts * d_cov * d_pose, (-1, d_cov, d_pose)),
    ):
        y = batch_normalization(momentum=_NORM_MOMENTUM, name=f"{kind}_norm")(x)
        y = keras.layers.Conv2D(
            size,
            1,
            kernel_initializer=kernel_init,
            bias_initializer=bias_init,
            name=f"{kind}_conv",
        )(y)
        outputs.append(keras.layers.Reshape(shape, name=f"input_{kind}s")(y))
    return outputs


def heinsen_image_backbone(
    image_shape=(None, None, 1),
    filters=64,
    num_parts=64,
    pose_shape=(4, 4),
    initialization="author",
    padding="same",
    name="heinsen_image_backbone",
):
    """Returns the backbone of Heinsen's (2019) smallNORB model.

    Coordinate channels (-1..1 down and across) join the image; six 3x3
    convolutions of `filters` channels with strides 1, 2, 1, 2, 1, 2, each
    after batch normalisation and followed by Swish; two 1x1 convolutions
    (each after batch normalisation) give every location `num_parts` input
    scores and poses of `pose_shape`.

    Args:
        image_shape: `(H, W, C)`; H and W may be None (any size).
        filters: int, channels of each convolution (64).
        num_parts: int, capsule types per location (64).
        pose_shape: `(d_cov, d)` of every capsule ((4, 4)).
        initialization: `"author"` (the author's code: Kaiming-normal 3x3
            kernels, PyTorch's defaults elsewhere) or `"keras"` (Glorot
            kernels, zero biases).
        padding: `"same"` (keeps every image size) or `"valid"` (the
            author's code) for the 3x3 convolutions.
        name: the model's name.

    Returns:
        A `keras.Model` from images to the input capsules in the capsule
        contract: `[scores (batch, n), poses (batch, n, d_cov, d)]`, `n =
        H' W' num_parts`.

    Examples:

        >>> backbone = heinsen_image_backbone((32, 32, 1), filters=8,
        ...                                   num_parts=8)
        >>> scores, poses = backbone(np.zeros((2, 32, 32, 1)))
        >>> tuple(poses.shape)  # 4 x 4 positions, 8 parts
        (2, 128, 4, 4)
    """
    check_heinsen_options(
        "heinsen_image_backbone", initialization=initialization, padding=padding
    )
    images = keras.Input(image_shape, name="images")
    capsules = heinsen_image_capsules(
        images, filters, num_parts, pose_shape, initialization, padding
    )
    return keras.Model(images, capsules, name=name)


def matrix_capsnet_capsules(images, A, B):
    """The matrix-capsule backbone applied to the `images` tensor; returns
    the primary capsules on a grid (`matrix_capsnet_backbone`)."""
    features = keras.layers.Conv2D(
        A, 5, strides=2, activation="relu", name="conv1"
    )(images)
    return layers.PrimaryMatrixCapsules(B, name="primary_caps")(features)


def matrix_capsnet_backbone(
    A=32, B=32, input_shape=(32, 32, 1), name="matrix_capsnet_backbone"
):
    """Returns the backbone of the matrix-capsule network (Hinton, Sabour,
    Frosst 2018, Fig. 1): a 5x5 ReLU convolution of stride 2 with `A`
    channels, then `B` types of primary capsules (`PrimaryMatrixCapsules`).

    Args:
        A: int, channels of the convolution.
        B: int, primary capsule types.
        input_shape: `(H, W, channels)`.
        name: the model's name.

    Returns:
        A `keras.Model` from images to the primary capsules on a grid in
        the capsule contract: `[logits (batch, H', W', B), poses (batch,
        H', W', B, 4, 4)]`.

    Examples:

        >>> backbone = matrix_capsnet_backbone(8, 4, (28, 28, 1))
        >>> logits, poses = backbone(np.zeros((2, 28, 28, 1)))
        >>> tuple(poses.shape)
        (2, 12, 12, 4, 4, 4)
    """
    images = keras.Input(input_shape, name="images")
    capsules = matrix_capsnet_capsules(images, A, B)
    return keras.Model(images, capsules, name=name)
