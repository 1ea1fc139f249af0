"""The matrix-capsule network of Hinton, Sabour, Frosst (2018, Fig. 1) and
the CNN baseline of its novel-viewpoint experiment (sec. 5.1)."""

import keras

from keras_capsules import layers
from keras_capsules.layers import inverse_temperatures as schedules
from keras_capsules.models.normalization import batch_normalization
from keras_capsules.ops.em_routing import VARIANCE_FLOOR

# Routing and initialisation of each named recipe;
# research/matrix_capsule_ablations.md gives the ablations behind
# "standardized".
RECIPES = {
    # The paper's Procedure 1 as written, lambda rising linearly to 0.001.
    "paper": {
        "num_iterations": 3,
        "final_inverse_temperature": (
            schedules.DEFAULT_FINAL_INVERSE_TEMPERATURE
        ),
        "activation_bias_gain": 1.0,
        "cost_normalization": "none",
        "variance_floor": VARIANCE_FLOOR,
        "assignment_smoothing": 0.0,
        "vote_weight_stddev": 0.5,
        "primary_activation_bias": 0.0,
        "batch_norm": False,
    },
    # Costs standardised across parent types (logits of unit spread in
    # every layer, so the bias learns and some capsules start off), lambda
    # rising linearly to 1, the official code's variance floor 5e-4, which
    # keeps tiny initial poses from committing every child, assignments
    # smoothed towards uniform so that no parent collapses onto one child
    # (with it 3 iterations learn as fast as 2), and 2 iterations (as
    # accurate as 3 and faster; research/matrix_capsules.md).
    "standardized": {
        "num_iterations": 2,
        "final_inverse_temperature": 1.0,
        "activation_bias_gain": 1.0,
        "cost_normalization": "standardize",
        "variance_floor": 5e-4,
        "assignment_smoothing": 0.8,
        "vote_weight_stddev": 0.5,
        "primary_activation_bias": 0.0,
        "batch_norm": False,
    },
}
DEFAULT_RECIPE = "standardized"


def matrix_capsnet(
    A=32,
    B=32,
    C=32,
    D=32,
    num_classes=10,
    input_shape=(32, 32, 1),
    num_iterations=None,
    inverse_temperatures=None,
    coordinate_addition=True,
    recipe=DEFAULT_RECIPE,
    name="matrix_capsnet",
    class_num_iterations=None,
    class_inverse_temperatures=None,
    **overrides,
):
    """Returns the paper's network, mapping images to class activations.

    ```none
    ReLU Conv1     5x5, A channels, stride 2
    PrimaryCaps    1x1, B capsule types (4x4 pose + activation)
    ConvCaps1      3x3, C types, stride 2, EM routing
    ConvCaps2      3x3, D types, stride 1, EM routing
    Class Capsules one per class, shared per type, coordinate addition
    ```

    The paper's model is `A = B = C = D = 32` (about 310K weights at 32x32
    inputs); its small model `A = 64, B = 8, C = D = 16` (68K).

    Args:
        A, B, C, D: the paper's channel and capsule-type counts.
        num_classes: int, class capsules.
        input_shape: `(H, W, channels)`; the smallest grid that fits is
            about 24x24 (ConvCaps2 needs a 3x3 grid).
        num_iterations: routing iterations of every capsule layer; None
            for the recipe's (`paper`: 3, `standardized`: 2).
        inverse_temperatures: optional `lambda` schedule (one per
            iteration) of every routing layer; None for the recipe's:
            rising linearly to its `final_inverse_temperature`.
        coordinate_addition: bool, coordinate addition in the class
            capsules. Defaults to `True`.
        recipe: a key of `RECIPES`: `"standardized"` (the default) or
            `"paper"` (Procedure 1 as written).
        name: model name.
        class_num_iterations: routing iterations of the class capsules
            alone; None for `num_iterations`. research/matrix_capsules.md:
            extra iterations slow early learning in the convolutional
            layers, not in the class capsules.
        class_inverse_temperatures: the class capsules' `lambda` schedule
            when `class_num_iterations` is set; None for one rising
            linearly to the recipe's `final_inverse_temperature`.
        **overrides: any entry of the recipe:
            `final_inverse_temperature` (float);
            `activation_bias_gain`, `cost_normalization`, `variance_floor`:
            how every routing layer turns costs into activations (see
            `layers.ConvMatrixCapsules`);
            `assignment_smoothing`: the share of each child's uniform
            assignment that every M-step after the first keeps, in every
            routing layer (research/matrix_capsules.md: it lets 3
            iterations learn as fast as 2);
            `vote_weight_stddev`: standard deviation of the truncated
            normal initialisation of every vote transformation `W`;
            `primary_activation_bias`: the initial bias of the primary
            capsules' activation logits;
            `batch_norm`: bool, batch normalisation after `conv1` (before
            its ReLU; the paper has none).

    Returns:
        A `keras.Model` from images to `(batch, num_classes)` class
        activations in `[0, 1]`; the layers are named `conv1`,
        `primary_caps`, `conv_caps1`, `conv_caps2`, `class_capsules`.
    """
    settings = recipe_settings(recipe, overrides)
    if num_iterations is None:
        num_iterations = settings["num_iterations"]
    if inverse_temperatures is None:
        inverse_temperatures = schedules.linear_inverse_temperatures(
            num_iterations, settings["final_inverse_temperature"]
        )
    routing = {
        "num_iterations": num_iterations,
        "inverse_temperatures": inverse_temperatures,
        "activation_bias_gain": settings["activation_bias_gain"],
        "cost_normalization": settings["cost_normalization"],
        "variance_floor": settings["variance_floor"],
        "assignment_smoothing": settings["assignment_smoothing"],
        "kernel_initializer": keras.initializers.TruncatedNormal(
            stddev=settings["vote_weight_stddev"]
        ),
    }
    class_routing = routing
    if class_num_iterations is None and class_inverse_temperatures is not None:
        raise ValueError(
            "`matrix_capsnet` got `class_inverse_temperatures` "
            f"{class_inverse_temperatures!r} without `class_num_iterations`."
            " Pass both, or neither."
        )
    if class_num_iterations is not None:
        if class_inverse_temperatures is None:
            class_inverse_temperatures = schedules.linear_inverse_temperatures(
                class_num_iterations,
                settings["final_inverse_temperature"],
            )
        class_routing = {
            **routing,
            "num_iterations": class_num_iterations,
            "inverse_temperatures": class_inverse_temperatures,
        }
    batch_norm = settings["batch_norm"]
    images = keras.Input(input_shape, name="images")
    features = keras.layers.Conv2D(
        A, 5, strides=2, use_bias=not batch_norm, name="conv1"
    )(images)
    if batch_norm:
        features = batch_normalization(name="conv1_norm")(features)
    features = keras.layers.ReLU(name="conv1_relu")(features)
    capsules = layers.PrimaryMatrixCapsules(
        B,
        activation_bias_initializer=keras.initializers.Constant(
            settings["primary_activation_bias"]
        ),
        name="primary_caps",
    )(features)
    capsules = layers.ConvMatrixCapsules(
        C, 3, strides=2, name="conv_caps1", **routing
    )(capsules)
    capsules = layers.ConvMatrixCapsules(
        D, 3, strides=1, name="conv_caps2", **routing
    )(capsules)
    activations, _ = layers.MatrixCapsuleEMRouting(
        num_classes,
        coordinate_addition=coordinate_addition,
        name="class_capsules",
        **class_routing,
    )(capsules)
    return keras.Model(images, activations, name=name)


def recipe_settings(recipe, overrides=None):
    """The `RECIPES[recipe]` entries with `overrides` (a dict, None values
    ignored) in their place."""
    if recipe not in RECIPES:
        raise ValueError(
            f"Unknown matrix-capsule recipe {recipe!r}. Expected one of "
            f"{tuple(RECIPES)}."
        )
    settings = dict(RECIPES[recipe])
    for key, value in (overrides or {}).items():
        if key not in settings:
            raise ValueError(
                f"`matrix_capsnet` got an unexpected argument {key!r}. "
                f"Expected one of {tuple(settings)} or the named ones."
            )
        if value is not None:
            settings[key] = value
    return settings


def small_matrix_capsnet(num_classes=10, input_shape=(32, 32, 1), **kwargs):
    """The paper's small model: `A = 64, B = 8, C = D = 16` (68K weights)."""
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
    probabilities."""
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
