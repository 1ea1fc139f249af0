"""Argument and shape checks shared by every layer."""

from keras_capsules.ops.arguments import positive_int


def check_positive_ints(layer, names):
    """Raises a ValueError unless each named attribute is an integer >= 1
    (Python or NumPy); stores it as a Python int (for the config)."""
    for name in names:
        value = positive_int(type(layer).__name__, name, getattr(layer, name))
        setattr(layer, name, value)


def check_at_least(layer, name, minimum):
    """Raises a ValueError unless the named int attribute is >= minimum."""
    value = getattr(layer, name)
    if value < minimum:
        raise ValueError(
            f"`{type(layer).__name__}` expects `{name}` >= {minimum}. "
            f"Received: {name}={value!r}."
        )


def feature_shape(layer, input_shape):
    """Checks `(batch, p)` with known p and returns the shape as a tuple."""
    return _known_last_axis(
        layer,
        input_shape,
        "inputs of shape (batch, p) with known p",
        "Flatten images first, e.g. with `keras.layers.Flatten()`.",
    )


def _known_last_axis(layer, input_shape, expected, hint):
    """`input_shape` as a tuple if it has as many axes as `expected`
    names (`"... (batch, H, W, C) ..."`) and a known last one."""
    input_shape = tuple(input_shape)
    rank = expected.count(",") + 1
    if len(input_shape) != rank or input_shape[-1] is None:
        raise ValueError(
            f"`{layer.name}` expects {expected}. Received: {input_shape}. "
            f"{hint}"
        )
    return input_shape


def capsule_shape(layer, input_shape, allow_unknown_count=False):
    """Checks `(batch, n_in, d_in)` and returns the shape as a tuple.

    Args:
        layer: the layer, for its name in the message.
        input_shape: the shape received by `build`.
        allow_unknown_count: bool, whether `n_in` may be `None` (layers
            whose weights do not depend on the input capsule).
    """
    input_shape = tuple(input_shape)
    known = input_shape[2:] if allow_unknown_count else input_shape[1:]
    if len(input_shape) != 3 or None in known:
        count = "any n_in" if allow_unknown_count else "known n_in"
        raise ValueError(
            f"`{layer.name}` expects capsules of shape (batch, n_in, d_in) "
            f"with {count} and known d_in. Received: {input_shape}. Turn "
            "conv features into capsules with `PrimaryCapsules` first."
        )
    return input_shape


def image_shape(layer, input_shape):
    """Checks `(batch, H, W, C)` with known C and returns it as a tuple."""
    return _known_last_axis(
        layer,
        input_shape,
        "feature maps of shape (batch, H, W, C) with known C (channels last)",
        "Add a channel axis to grey images, e.g. `images[..., None]`.",
    )


def check_option(layer, name, value, options):
    """Raises a ValueError unless `value` is one of `options`."""
    if value not in options:
        raise ValueError(
            f"`{type(layer).__name__}` expects `{name}` to be one of "
            f"{options}. Received: {name}={value!r}."
        )


def set_window(layer, kernel_size, strides, padding):
    """Sets a convolutional layer's `kernel_size`, `strides` and `padding`;
    raises a ValueError unless `padding` is `"valid"` or `"same"`."""
    check_option(layer, "padding", padding, ("valid", "same"))
    layer.kernel_size = kernel_size
    layer.strides = strides
    layer.padding = padding


def is_list_of_shapes(input_shape):
    """Whether `input_shape` holds the shapes of several inputs."""
    return (
        isinstance(input_shape, (list, tuple))
        and all(isinstance(shape, (list, tuple)) for shape in input_shape)
        and len(input_shape) > 0
    )


def pair_of_shapes(input_shape):
    """The two shapes of a layer with two inputs (`[activations, poses]`,
    `[logits, poses]`) as tuples, or None for anything else."""
    if (
        isinstance(input_shape, (list, tuple))
        and len(input_shape) == 2
        and isinstance(input_shape[0], (list, tuple))
    ):
        return [tuple(shape) for shape in input_shape]
    return None


def matrix_capsule_shapes(layer, input_shape, grid_only=False):
    """Checks `[activations, poses]` of matrix capsules and returns the
    poses' shape without the `4 x 4`: `(batch, H, W, B)` for a grid, or
    `(batch, n)` for a list of capsules (unless `grid_only`)."""
    shapes = pair_of_shapes(input_shape)
    grid_ranks = (4,) if grid_only else (2, 4)
    if (
        shapes is None
        or len(shapes[0]) not in grid_ranks
        or shapes[1][:-2] != shapes[0]
        or shapes[1][-2:] != (4, 4)
        or shapes[0][-1] is None
    ):
        expected = "(batch, H, W, B) and (batch, H, W, B, 4, 4)"
        if not grid_only:
            expected += ", or (batch, n) and (batch, n, 4, 4)"
        raise ValueError(
            f"`{layer.name}` expects `[activations, poses]` of shapes "
            f"{expected}, with a known last capsule axis. Received: "
            f"{input_shape}. Make matrix capsules from feature maps with "
            "`PrimaryMatrixCapsules`."
        )
    return shapes[0]
