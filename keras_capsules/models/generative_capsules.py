"""The generative capsule autoencoder of Smith, Schut, Gal and van der Wilk
(2020): amortised encoders, the template decoder and the bound."""

import keras

from keras_capsules import distributions
from keras_capsules import layers as capsule_layers
from keras_capsules.models.generative_capsule_autoencoder import (
    GenerativeCapsuleAutoencoder,
)
from keras_capsules.models.generative_capsule_config import (
    GenerativeCapsuleConfig,
)


def posterior_size(pose_posterior):
    """Numbers per capsule of the variational parameters: a presence logit,
    a pose mean and, for Gaussian poses, a pose std."""
    pose_dim = distributions.POSE_DIM
    return 1 + pose_dim * (2 if pose_posterior == "gaussian" else 1)


def template_encoder(
    image_shape=(28, 28, 1),
    num_template_capsules=16,
    channels=32,
    pose_posterior="delta",
    name="template_encoder",
):
    """`q(t^1, A^1 | X)`: 4 conv layers (3x3, `channels`, stride 2 in the
    first two, ELU) and attentive pooling, as in Smith et al. (2020,
    supplementary B). Returns a functional model from images to
    `(batch, n1, posterior_size)` variational parameters.

    Examples:

        >>> encoder = template_encoder((28, 28, 1), num_template_capsules=4)
        >>> encoder(np.zeros((2, 28, 28, 1))).shape
        TensorShape([2, 4, 7])
    """
    images = keras.Input(image_shape, name="images")
    x = images
    for strides in (2, 2, 1, 1):
        x = keras.layers.Conv2D(
            channels, 3, strides=strides, padding="same", activation="elu"
        )(x)
    parameters = capsule_layers.AttentivePooling(
        num_template_capsules, posterior_size(pose_posterior)
    )(x)
    return keras.Model(images, parameters, name=name)


def top_encoder(
    num_template_capsules=16,
    num_top_capsules=16,
    hidden_dim=128,
    num_blocks=4,
    num_inducing_points=32,
    num_heads=4,
    code_dim=32,
    pose_posterior="delta",
    name="top_encoder",
):
    """`q(t^0, A^0 | t^1, A^1)`: a set transformer over the template
    capsules (Smith et al., 2020, supplementary B: 4 ISAB blocks of 128
    features, 32 inducing points, 4 heads, layer norm; PMA; a linear map
    to a 32-D code; one-hidden-layer MLP heads of 128 units).

    Its input is `(batch, n1, 7)`: each template's presence and pose.
    Returns `(batch, n0, posterior_size)` variational parameters.

    Template poses vary by about 0.1 from image to image, far less than
    the learned constants (capsule embeddings, inducing points) they are
    added to; after each post-norm attention block the image-dependent
    part shrinks further (by about 100 times over the 4 blocks and PMA of
    a model trained for 2 epochs), so the encoder's output hardly depends
    on its input (normalising its inputs did not change what the top
    layer learned: research/generative_capsules_top_layer.md).

    Examples:

        >>> encoder = top_encoder(4, 2, hidden_dim=8, num_blocks=1,
        ...                       num_inducing_points=2, num_heads=1,
        ...                       code_dim=4)
        >>> encoder(np.zeros((3, 4, 7))).shape
        TensorShape([3, 2, 7])
    """
    capsules = keras.Input(
        (num_template_capsules, 1 + distributions.POSE_DIM), name="templates"
    )
    x = keras.layers.Dense(hidden_dim)(capsules)
    x = capsule_layers.CapsuleEmbedding()(x)
    for _ in range(num_blocks):
        x = capsule_layers.InducedSetAttention(num_inducing_points, num_heads)(
            x
        )
    x = capsule_layers.PoolingByMultiheadAttention(1, num_heads)(x)
    code = keras.layers.Dense(code_dim)(keras.layers.Flatten()(x))
    pose_dim = distributions.POSE_DIM
    head_sizes = [1, pose_dim] + (
        [pose_dim] if pose_posterior == "gaussian" else []
    )
    heads = []
    for size in head_sizes:
        hidden = keras.layers.Dense(hidden_dim, activation="elu")(code)
        head = keras.layers.Dense(num_top_capsules * size)(hidden)
        heads.append(keras.layers.Reshape((num_top_capsules, size))(head))
    parameters = keras.layers.Concatenate()(heads)
    return keras.Model(capsules, parameters, name=name)


def generative_capsule_autoencoder(
    image_shape=(28, 28, 1), config=None, seed=None
):
    """A built `GenerativeCapsuleAutoencoder` of the paper's architecture
    (section 4, supplementary B) with `config`'s sizes and inference.

    Args:
        image_shape: `(H, W, C)` of the images.
        config: a `GenerativeCapsuleConfig`, the name of one of its presets
            (`GenerativeCapsuleConfig.PRESETS`: `"paper"`,
            `"computed_top_poses"`, `"single_parent"`,
            `"computed_presences_32"`) or None for the paper's.
        seed: int seed of the bound's Monte Carlo draws.

    Examples:

        >>> model = generative_capsule_autoencoder(
        ...     (28, 28, 1), GenerativeCapsuleConfig(num_top_capsules=4))
        >>> model(np.zeros((2, 28, 28, 1))).shape
        TensorShape([2, 28, 28, 1])
    """
    config = GenerativeCapsuleConfig.get(config)
    decoder = capsule_layers.GenerativeCapsuleDecoder(
        image_shape=image_shape, **config.decoder_arguments()
    )
    decoder.build()
    model = GenerativeCapsuleAutoencoder(
        decoder,
        template_encoder(
            image_shape,
            config.num_template_capsules,
            channels=config.template_channels,
            pose_posterior=config.pose_posterior,
        ),
        top_encoder(
            config.num_template_capsules,
            config.num_top_capsules,
            pose_posterior=config.pose_posterior,
        ),
        config=config,
        seed=seed,
    )
    model.build((None, *image_shape))
    # A symbolic call (no computation) records the input signature, so
    # `model.export` works before any real call.
    model(keras.KerasTensor((None, *image_shape)))
    return model
