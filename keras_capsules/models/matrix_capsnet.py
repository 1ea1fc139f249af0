"""The matrix-capsule network of Hinton, Sabour, Frosst (2018, Fig. 1) and
the CNN baseline of its novel-viewpoint experiment (sec. 5.1)."""

import keras

from keras_capsules import layers
from keras_capsules.models.paper_backbones import matrix_capsnet_capsules

# The routing of the model by default; `layers.EMRouting.PRESETS`.
DEFAULT_ROUTING = "standardized"


def matrix_capsnet(
    A=32,
    B=32,
    C=32,
    D=32,
    num_classes=10,
    input_shape=(32, 32, 1),
    routing=DEFAULT_ROUTING,
    coordinate_addition=True,
    name="matrix_capsnet",
):
    """Returns the paper's network, mapping images to class activations.

    ```none
    ReLU Conv1     5x5, A channels, stride 2          } the backbone
    PrimaryCaps    1x1, B capsule types (4x4 pose     } (alone:
                   and activation logit)              } matrix_capsnet_backbone)
    ConvCaps1      3x3, C types, stride 2, EM routing } the routing head
    ConvCaps2      3x3, D types, stride 1, EM routing
    Class Capsules one per class, shared per type, coordinate addition
    ```

    The paper's model is `A = B = C = D = 32` (about 310K weights at 32x32
    inputs); its small model `A = 64, B = 8, C = D = 16` (68K). Every
    capsule layer speaks the capsule contract on a grid (activation
    logits and poses); the model's output is the class capsules'
    activations.

    Args:
        A: int, channels of the first convolution.
        B: int, primary capsule types.
        C: int, capsule types of ConvCaps1.
        D: int, capsule types of ConvCaps2.
        num_classes: int, class capsules.
        input_shape: `(H, W, channels)`; the smallest grid that fits is
            about 24x24 (ConvCaps2 needs a 3x3 grid).
        routing: the `layers.EMRouting` of every routing layer, or the name
            of one of its presets: `"standardized"` (the default: 2
            iterations, standardised costs, assignment smoothing; the
            ablations behind it are in research/matrix_capsule_ablations.md)
            or `"paper"` (Procedure 1 as written, 3 iterations).
        coordinate_addition: bool, coordinate addition in the class
            capsules. Defaults to `True`.
        name: model name.

    Returns:
        A `keras.Model` from images to `(batch, num_classes)` class
        activations in `[0, 1]`; the layers are named `conv1`,
        `primary_caps`, `conv_caps1`, `conv_caps2`, `class_capsules`.

    Examples:

        >>> model = matrix_capsnet(8, 4, 4, 4, num_classes=5, routing="paper")
        >>> tuple(model(np.zeros((2, 32, 32, 1))).shape)
        (2, 5)
    """
    images = keras.Input(input_shape, name="images")
    capsules = matrix_capsnet_capsules(images, A, B)  # the backbone
    capsules = layers.ConvMatrixCapsules(
        C, 3, strides=2, routing=routing, name="conv_caps1"
    )(capsules)
    capsules = layers.ConvMatrixCapsules(
        D, 3, strides=1, routing=routing, name="conv_caps2"
    )(capsules)
    logits, _ = layers.MatrixCapsuleEMRouting(
        num_classes,
        coordinate_addition=coordinate_addition,
        routing=routing,
        name="class_capsules",
    )(capsules)
    activations = keras.layers.Activation("sigmoid", name="activations")(logits)
    return keras.Model(images, activations, name=name)


def small_matrix_capsnet(num_classes=10, input_shape=(32, 32, 1), **kwargs):
    """The paper's small model: `A = 64, B = 8, C = D = 16` (68K weights);
    the other arguments are `matrix_capsnet`'s.

    Examples:

        >>> model = small_matrix_capsnet(5, (28, 28, 1), routing="paper")
        >>> model.get_layer("class_capsules").num_iterations
        3
    """
    return matrix_capsnet(
        64,
        8,
        16,
        16,
        num_classes,
        input_shape,
        name="small_matrix_capsnet",
        **kwargs,
    )


def viewpoint_cnn(num_classes=10, input_shape=(32, 32, 1), name="cnn"):
    """The CNN baseline of the paper's novel-viewpoint experiment: 5x5
    convolutions of 32 and 64 channels (stride 1, each followed by 2x2 max
    pooling), 1024 ReLU units with dropout, and a softmax. Returns class
    probabilities.

    Examples:

        >>> cnn = viewpoint_cnn(num_classes=5)
        >>> tuple(cnn(np.zeros((2, 32, 32, 1))).shape)
        (2, 5)
    """
    images = keras.Input(input_shape, name="images")
    x = keras.layers.Conv2D(32, 5, activation="relu", padding="same")(images)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Conv2D(64, 5, activation="relu", padding="same")(x)
    x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(1024, activation="relu")(x)
    x = keras.layers.Dropout(0.5)(x)
    probabilities = keras.layers.Dense(num_classes, activation="softmax")(x)
    return keras.Model(images, probabilities, name=name)
