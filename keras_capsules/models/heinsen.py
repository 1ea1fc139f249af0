"""Heinsen's (2019) capsule networks for images (sec. 4, Fig. 3) and for
sequences of embeddings (sec. 5, Fig. 5)."""

import keras

from keras_capsules import layers
from keras_capsules.models import paper_backbones


def heinsen_image(
    image_shape=(None, None, 1),
    num_classes=10,
    filters=64,
    num_parts=64,
    pose_shape=(4, 4),
    num_iterations=3,
    initialization="author",
    padding="same",
    routing_epsilon=1e-5,
    name="heinsen_image",
):
    """Returns Heinsen's smallNORB model for images of any size.

    The backbone (`heinsen_image_backbone`: coordinate channels, six 3x3
    convolutions with batch normalisation and Swish, two 1x1 convolutions)
    gives every location `num_parts` input scores and poses of
    `pose_shape`. The routing head: routing 1 takes the `num_parts x H'
    x W'` input capsules with weights shared across them (any image size)
    to `num_parts` capsules; routing 2 takes those (weights per input) to
    `num_classes` capsules. The output is the class capsules' scores
    (logits): train with cross-entropy on a softmax of them.

    With the defaults and 96x96 stereo pairs this is the paper's model
    (about 272K weights). The author's code differs from the paper's text
    in details the text leaves open; by default this model follows the
    code: its initialisation and routing epsilon. Its convolutions pad
    nothing (`padding="valid"`, 5,184 input capsules from 96x96 images);
    `"same"` keeps every image size (28x28 MNIST has no valid output after
    six convolutions) and gives 9,216.

    Args:
        image_shape: `(H, W, C)`; H and W may be None (any size).
        num_classes: int, output capsules of routing 2.
        filters: int, channels of each convolution (64).
        num_parts: int, capsule types per location and capsules out of
            routing 1 (64).
        pose_shape: `(d_cov, d)` of every capsule ((4, 4)).
        num_iterations: int, routing iterations of both routings (3).
        initialization: `"author"` (the author's code: Kaiming-normal 3x3
            kernels, PyTorch's defaults elsewhere) or `"keras"` (Glorot
            kernels, zero biases).
        padding: `"same"` or `"valid"` (the author's code) for the 3x3
            convolutions.
        routing_epsilon: the `epsilon` of both routings (1e-5, the
            author's code).
        name: the model's name.

    Returns:
        A functional `keras.Model`: images `(batch, H, W, C)` to scores
        `(batch, num_classes)`.

    Examples:

        >>> model = heinsen_image((32, 32, 1), num_classes=5, filters=8,
        ...                       num_parts=8)
        >>> tuple(model(np.zeros((2, 32, 32, 1))).shape)
        (2, 5)
    """
    paper_backbones.check_heinsen_options(
        "heinsen_image", initialization=initialization, padding=padding
    )
    images = keras.Input(image_shape, name="images")
    scores, poses = paper_backbones.heinsen_image_capsules(
        images, filters, num_parts, pose_shape, initialization, padding
    )
    class_scores = part_and_class_routing(
        scores,
        poses,
        num_parts,
        num_classes,
        pose_shape[1],
        num_iterations,
        routing_epsilon,
    )
    return keras.Model(images, class_scores, name=name)


def heinsen_sequence(
    embedding_dim,
    num_classes,
    num_depths=None,
    capsule_size=64,
    num_capsules=64,
    capsule_dim=2,
    num_iterations=3,
    routing_epsilon=1e-5,
    name="heinsen_sequence",
):
    """Returns Heinsen's SST model over sequences of embeddings.

    Features `(batch, n, l, m)` from `l` layers of a transformer (a learned
    depth embedding is added), or `(batch, n, m)` from one layer, go
    through an affine map to `capsule_size` (Kaiming-normal), Swish and
    layer normalisation, and become `n x l` input capsules of `1 x
    capsule_size`; their scores are the logits of the tokens' presence
    weights (1 token, 0 padding), and padding is masked. Routing 1 takes
    any number of them to `num_capsules` capsules of `1 x capsule_dim`;
    routing 2 takes those to `num_classes`. The output is the class scores
    (logits).

    Args:
        embedding_dim: int, `m`.
        num_classes: int, 5 for SST-5, 2 for SST-2.
        num_depths: int `l` of per-layer features, or None for one layer.
        capsule_size: int, size of each input capsule (64).
        num_capsules: int, capsules out of routing 1 (64).
        capsule_dim: int, columns of the routed capsules (2).
        num_iterations: int, routing iterations of both routings (3).
        routing_epsilon: the `epsilon` of both routings (1e-5, the
            author's code).
        name: the model's name.

    Returns:
        A functional `keras.Model`: `[embeddings, presence]` (presence
        `(batch, n)` float weights) to scores `(batch, num_classes)`.

    Examples:

        >>> model = heinsen_sequence(embedding_dim=8, num_classes=5,
        ...                          num_capsules=4)
        >>> scores = model([np.zeros((2, 7, 8)), np.ones((2, 7))])
        >>> tuple(scores.shape)
        (2, 5)
    """
    if num_depths is None:
        embeddings = keras.Input((None, embedding_dim), name="embeddings")
        x = embeddings
        repeats = 1
    else:
        embeddings = keras.Input(
            (None, num_depths, embedding_dim), name="embeddings"
        )
        x = layers.DepthEmbedding(name="depth_embedding")(embeddings)
        repeats = num_depths
    presence = keras.Input((None,), name="presence")
    x = keras.layers.Dense(
        capsule_size,
        activation="swish",
        kernel_initializer="he_normal",
        name="affine",
    )(x)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    capsules = keras.layers.Reshape((-1, 1, capsule_size), name="capsules")(x)
    scores = layers.PresenceScores(repeats, name="input_scores")(presence)
    class_scores = part_and_class_routing(
        scores,
        capsules,
        num_capsules,
        num_classes,
        capsule_dim,
        num_iterations,
        routing_epsilon,
    )
    return keras.Model([embeddings, presence], class_scores, name=name)


def token_embedder(vocabulary_size, embedding_dim, name="token_embedder"):
    """Returns a model from token ids `(batch, n)` (0 = padding) to
    `[embeddings (batch, n, embedding_dim), presence (batch, n)]`, the
    inputs of `heinsen_sequence` with trainable embeddings.

    Examples:

        >>> embeddings, presence = token_embedder(100, 8)(np.array([[5, 9, 0]]))
        >>> tuple(embeddings.shape), ops.convert_to_numpy(presence).tolist()
        ((1, 3, 8), [[1.0, 1.0, 0.0]])
    """
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    embeddings = keras.layers.Embedding(
        vocabulary_size, embedding_dim, name="embedding"
    )(token_ids)
    presence = keras.layers.Activation("linear", name="presence")(
        keras.ops.cast(keras.ops.not_equal(token_ids, 0), "float32")
    )
    return keras.Model(token_ids, [embeddings, presence], name=name)


def part_and_class_routing(
    scores, poses, num_parts, num_classes, capsule_dim, num_iterations, epsilon
):
    """Both models' head: a variable number of input capsules
    `[scores (b, n), poses (b, n, d_cov, d_in)]` routed to `num_parts`
    part capsules of `d_cov x capsule_dim` ("part_routing", one weight
    shared by all inputs), those to `num_classes` class capsules
    ("class_routing"); returns the class scores `(b, num_classes)`."""
    part_scores, parts = layers.HeinsenRouting(
        num_parts,
        capsule_dim,
        num_iterations=num_iterations,
        share_weights=True,
        epsilon=epsilon,
        name="part_routing",
    )([scores, poses])
    class_scores, _ = layers.HeinsenRouting(
        num_classes,
        capsule_dim,
        num_iterations=num_iterations,
        epsilon=epsilon,
        name="class_routing",
    )([part_scores, parts])
    return class_scores
