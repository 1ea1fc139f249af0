"""Argument checks shared by the ops, layers and trainers."""

import numbers


def is_integer(value):
    """True for Python and NumPy integers, False for bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def positive_int(owner, name, value):
    """`value` as a Python int if it is an integer >= 1 (Python or NumPy);
    else a ValueError that names `owner`'s argument `name`."""
    if not is_integer(value) or value < 1:
        raise ValueError(
            f"`{owner}` expects `{name}` to be a positive integer. "
            f"Received: {name}={value!r}."
        )
    return int(value)


def check_num_iterations(op_name, num_iterations):
    """Raises a ValueError unless `num_iterations` is an integer >= 1."""
    if not is_integer(num_iterations) or num_iterations < 1:
        raise ValueError(
            f"`{op_name}` expects `num_iterations` to be an int >= 1. "
            f"Received: {num_iterations!r}."
        )
