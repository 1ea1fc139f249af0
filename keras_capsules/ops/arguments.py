"""Argument checks shared by the routing ops."""


def check_num_iterations(op_name, num_iterations):
    """Raises a ValueError unless `num_iterations` is an int >= 1."""
    if (
        isinstance(num_iterations, bool)
        or not isinstance(num_iterations, int)
        or num_iterations < 1
    ):
        raise ValueError(
            f"`{op_name}` expects `num_iterations` to be an int >= 1. "
            f"Received: {num_iterations!r}."
        )
