"""One backbone, any routing family: the comparison every capsule paper
makes, on equal terms."""

import keras

from keras_capsules import layers, losses

ROUTINGS = (
    "dynamic",
    "em",
    "heinsen",
    "self_attention",
    "inverted_attention",
    "variational_bayes",
    "self_routing",
    "uniform",
    "regression",
)
# The families' layers that take the classifier's `num_iterations`, and
# those that route in one pass.
_LAYERS = {
    "dynamic": layers.DynamicRouting,
    "heinsen": layers.HeinsenRouting,
    "inverted_attention": layers.InvertedAttentionRouting,
    "variational_bayes": layers.VariationalBayesRouting,
}
_ONE_PASS_LAYERS = {
    "self_attention": layers.SelfAttentionRouting,
    "self_routing": layers.SelfRouting,
    "uniform": layers.UniformRouting,
}

# EM routing of the class capsules: the library's "standardized" preset
# (`layers.EMRouting.PRESETS`; docs/guides/matrix-capsules.md), whose
# Procedure 1 as written saturates its activations here, with the
# classifier's number of iterations. With fewer than 3 classes, whose
# standardised costs would be constant, it divides the costs by the
# number of children instead.
_EM_PRESET = "standardized"


def default_backbone(image_shape, filters=(32, 64)):
    """Returns the classifier's default backbone: 5x5 then 3x3 ReLU
    convolutions, each of stride 2 (`"same"` padding), so 28x28 images
    give 7x7 feature maps.

    Args:
        image_shape: `(H, W, channels)`.
        filters: channels of the two convolutions.

    Examples:

        >>> backbone = default_backbone((28, 28, 1))
        >>> tuple(backbone(np.zeros((2, 28, 28, 1))).shape)
        (2, 7, 7, 64)
    """
    images = keras.Input(image_shape)
    features = images
    for index, (channels, size) in enumerate(zip(filters, (5, 3))):
        features = keras.layers.Conv2D(
            channels,
            size,
            strides=2,
            padding="same",
            activation="relu",
            name=f"conv{index + 1}",
        )(features)
    return keras.Model(images, features, name="backbone")


def _routing_layer(routing, num_classes, capsule_dim, num_iterations):
    if not isinstance(routing, str):
        return routing
    name = "class_capsules"
    if routing in _LAYERS:
        return _LAYERS[routing](
            num_classes, capsule_dim, num_iterations=num_iterations, name=name
        )
    if routing in _ONE_PASS_LAYERS:
        return _ONE_PASS_LAYERS[routing](num_classes, capsule_dim, name=name)
    settings = layers.EMRouting.preset(_EM_PRESET).replace(
        num_iterations=num_iterations
    )
    if num_classes < 3:
        settings = settings.replace(cost_normalization="per_child")
    return layers.MatrixCapsuleEMRouting(
        num_classes, capsule_dim, routing=settings, name=name
    )


def _capsule_list(capsules):
    """A capsule backbone's output as a list of capsules `[(b, n), (b, n,
    d_cov, d)]`, flattened from a grid `[(b, H, W, B), (b, H, W, B, d_cov,
    d)]`."""
    if len(capsules) != 2 or len(capsules[1].shape) not in (4, 6):
        shapes = [tuple(x.shape) for x in capsules]
        raise ValueError(
            "`capsule_classifier` expects a backbone that gives feature "
            "maps `(batch, H, W, C)` or capsules in the capsule contract: "
            "`[logits (batch, n), poses (batch, n, d_cov, d)]` or the same "
            f"on a grid. Received outputs of shapes {shapes}."
        )
    if len(capsules[1].shape) == 6:
        return layers.FlattenCapsules(name="primary_list")(capsules)
    return capsules


def capsule_classifier(
    image_shape,
    num_classes,
    routing="heinsen",
    backbone=None,
    num_primary_types=8,
    capsule_dim=4,
    num_iterations=3,
    name=None,
):
    """Returns a classifier: backbone, primary capsules, class capsules.

    ```none
    backbone         images -> feature maps (batch, H, W, C)
    primary_caps     1x1 convolutions -> the capsule contract on a grid
    primary_list     the grid as a list: n = H W B capsules, (batch, n)
                     logits, (batch, n, 4, 4) poses
    class_capsules   the routing family -> (batch, num_classes) logits,
                     (batch, num_classes, 4, capsule_dim) poses
    ```

    The primary stage (`layers.PrimaryMatrixCapsules`, then
    `layers.FlattenCapsules`) is the same for every family, and each
    family's class capsules have a weight `W[i, j]` of `4 x capsule_dim`
    per input and class, so the families differ only in how they route.
    `routing="regression"` replaces the primary and class capsules with a
    `CapsuleRegression` head over the flattened features (Saul's model:
    one capsule per class, no routing); its logits are the log of its class
    probabilities. A layer given as `routing` must map the input capsules
    `[logits (batch, n), poses (batch, n, d_cov, d)]` (4 x 4 poses from
    the primary stage) to `[logits (batch, num_classes), poses]` (the
    capsule contract; see `layers.CapsuleRouting`).

    A backbone that gives capsules in the contract, such as a paper
    model's (`capsnet_backbone`, `heinsen_image_backbone`,
    `matrix_capsnet_backbone`), takes the place of the primary stage: its
    capsules (flattened if on a grid) go to the routing head, so any
    family can route any paper's capsules.

    `classifier_loss(routing)` gives each family's loss on these logits.

    Args:
        image_shape: `(H, W, channels)`.
        num_classes: int, classes.
        routing: one of `ROUTINGS` (`"dynamic"`, `"em"`, `"heinsen"`,
            `"self_attention"`, `"inverted_attention"`,
            `"variational_bayes"`, `"self_routing"`, `"uniform"`,
            `"regression"`), or a layer that keeps the capsule contract.
            Defaults to `"heinsen"`. `"em"` routes with the
            `"standardized"` `layers.EMRouting` (costs standardised across
            the classes, or, for fewer than 3 classes, divided by the
            number of input capsules); `"variational_bayes"` adds the
            authors' batch normalisation of the class logits
            (`class_logit_norm`).
        backbone: a Keras model (or layer) from images to feature maps
            `(batch, H, W, C)` or to capsules in the contract; None for
            `default_backbone(image_shape)`.
        num_primary_types: int `B`, primary capsule types per position.
        capsule_dim: int, columns of each class capsule's pose.
        num_iterations: int, routing iterations of the class capsules
            (not used by the one-pass families `"self_attention"`,
            `"self_routing"` and `"uniform"`).
        name: model name; None for `capsule_classifier_<routing>`.

    Returns:
        A `keras.Model` from images to `(batch, num_classes)` class logits
        (class activations `sigmoid(logits)`); the routing layer is
        `model.get_layer("class_capsules")`, its output poses
        `model.get_layer("class_capsules").output[1]`.

    Examples:

        >>> model = capsule_classifier((28, 28, 1), 10, routing="dynamic")
        >>> tuple(model(np.zeros((2, 28, 28, 1))).shape)  # class logits
        (2, 10)
        >>> from keras_capsules.layers import HeinsenRouting
        >>> model = capsule_classifier(
        ...     (28, 28, 1), 10, routing=HeinsenRouting(10, 4,
        ...      num_iterations=2))
        >>> from keras_capsules.models import matrix_capsnet_backbone
        >>> model = capsule_classifier(
        ...     (28, 28, 1), 10, routing="dynamic",
        ...     backbone=matrix_capsnet_backbone(8, 4, (28, 28, 1)))
        >>> tuple(model(np.zeros((2, 28, 28, 1))).shape)
        (2, 10)
    """
    if isinstance(routing, str) and routing not in ROUTINGS:
        raise ValueError(
            "`capsule_classifier` expects `routing` to be one of "
            f"{ROUTINGS} or a layer that keeps the capsule contract. "
            f"Received: routing={routing!r}."
        )
    images = keras.Input(image_shape, name="images")
    backbone = backbone or default_backbone(image_shape)
    features = backbone(images)
    gives_capsules = isinstance(features, (list, tuple))
    if routing == "regression":
        if gives_capsules:
            raise ValueError(
                "`capsule_classifier` with routing='regression' expects a "
                "backbone that gives feature maps. Received a backbone "
                f"that gives {len(features)} outputs (capsules). Pass "
                "another routing, or a backbone of feature maps."
            )
        flat = keras.layers.Flatten(name="flatten")(features)
        logits = layers.CapsuleRegression(
            num_classes, capsule_dim, return_logits=True, name="class_capsules"
        )(flat)
    else:
        if gives_capsules:
            capsules = _capsule_list(features)
        else:
            capsules = layers.PrimaryMatrixCapsules(
                num_primary_types, name="primary_caps"
            )(features)
            capsules = layers.FlattenCapsules(name="primary_list")(capsules)
        logits, _ = _routing_layer(
            routing, num_classes, capsule_dim, num_iterations
        )(capsules)
        if routing == "variational_bayes":
            # The authors batch-normalise VB routing's logits (no scale or
            # offset): its entropies' scale grows with the pose size.
            logits = keras.layers.BatchNormalization(
                center=False, scale=False, name="class_logit_norm"
            )(logits)
    label = routing if isinstance(routing, str) else type(routing).__name__
    return keras.Model(
        images, logits, name=name or f"capsule_classifier_{label.lower()}"
    )


def classifier_loss(routing):
    """Each family's loss on class logits, with class ids as labels, as
    its paper trains it: the margin loss on capsule lengths for
    `"dynamic"` (Sabour et al.), `"self_attention"` (Mazzia et al.) and
    `"uniform"`; the spread loss for `"em"` (Hinton et al.; raise its
    margin with `callbacks.SpreadLossMargin`); the negative log of the
    true class's activation for `"self_routing"` (Hahn et al.: its class
    activations sum to 1); cross-entropy for `"heinsen"`,
    `"inverted_attention"`, `"variational_bayes"`, `"regression"` and any
    other routing layer.

    Examples:

        >>> type(classifier_loss("em")).__name__
        'SpreadLoss'
        >>> type(classifier_loss("heinsen")).__name__
        'SparseCategoricalCrossentropy'
    """
    if routing in ("dynamic", "self_attention", "uniform"):
        return losses.MarginLoss(from_logits=True)
    if routing == "self_routing":
        return losses.ActivationLogLoss(from_logits=True)
    if routing == "em":
        return losses.SpreadLoss(from_logits=True)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
