"""Argument and shape checks shared by every layer."""


def check_positive_ints(layer, names):
    """Raises a ValueError unless each named attribute is an int >= 1."""
    for name in names:
        value = getattr(layer, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(
                f"`{type(layer).__name__}` expects `{name}` to be a positive "
                f"integer. Received: {name}={value!r}."
            )


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
    input_shape = tuple(input_shape)
    if len(input_shape) != 2 or input_shape[-1] is None:
        raise ValueError(
            f"`{layer.name}` expects inputs of shape (batch, p) with known p. "
            f"Received: {input_shape}. Flatten images first, e.g. with "
            "`keras.layers.Flatten()`."
        )
    return input_shape
