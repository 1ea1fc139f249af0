"""Checks of EM routing's inputs besides the votes: activations, mask,
betas and inverse temperatures."""

from keras import ops

from keras_capsules.ops import labels as value_checks
from keras_capsules.ops.arguments import check_broadcastable, check_shape


def check_inverse_temperatures(op_name, inverse_temperatures):
    """Returns the number of iterations: the length of the schedule."""
    count = (
        inverse_temperatures.shape[0]
        if hasattr(inverse_temperatures, "shape")
        else len(inverse_temperatures)
    )
    if not isinstance(count, int) or count < 1:
        raise ValueError(
            f"`{op_name}` expects `inverse_temperatures` to hold one value "
            "per routing iteration (at least one, e.g. `[1.0, 2.0, 3.0]` "
            f"for 3 iterations). Received: {inverse_temperatures!r}."
        )
    return count


def routing_inputs(
    op_name,
    dtype,
    activations,
    activations_shape,
    mask,
    betas,
    inverse_temperatures,
    options,
):
    """Checks the inputs of an EM routing op besides its votes and returns
    `(activations, beta_u, beta_a, inverse_temperatures)` in `dtype`.

    `activations` must have `activations_shape` (as must `mask`, when
    given) and lie in [0, 1]; `betas` is `(beta_u, beta_a, n_out)`, each
    beta broadcastable to `(n_out,)`; the inverse temperatures must be
    positive and finite. Masked children (mask False) get activation 0,
    whatever they held.
    """
    check_inverse_temperatures(op_name, inverse_temperatures)
    options.check(op_name)
    check_shape(op_name, "activations", activations, activations_shape)
    beta_u, beta_a, n_out = betas
    for name, beta in (("beta_u", beta_u), ("beta_a", beta_a)):
        check_broadcastable(op_name, name, beta, (n_out,))
    activations = ops.cast(activations, dtype)
    if mask is not None:  # Padded children may hold anything.
        mask = check_shape(op_name, "mask", mask, activations_shape)
        activations = ops.where(ops.cast(mask, "bool"), activations, 0.0)
    activations = checked_activations(op_name, activations, dtype)
    inverse_temperatures = ops.convert_to_tensor(inverse_temperatures, dtype)
    inverse_temperatures = value_checks.checked(
        op_name,
        inverse_temperatures,
        inverse_temperatures,
        [
            (
                ops.all(ops.isfinite(inverse_temperatures))
                & ops.all(inverse_temperatures > 0),
                "positive finite inverse temperatures lambda",
            )
        ],
        what="inverse_temperatures",
    )
    return (
        activations,
        ops.cast(beta_u, dtype),
        ops.cast(beta_a, dtype),
        inverse_temperatures,
    )


def checked_activations(op_name, activations, dtype):
    """Child activations `a_i` in `dtype`, once they are in [0, 1] (a
    ValueError in eager mode, an assertion in a graph; compiled out under
    XLA)."""
    activations = ops.cast(activations, dtype)
    return value_checks.checked(
        op_name,
        activations,
        activations,
        [
            (
                ops.all((activations >= 0.0) & (activations <= 1.0)),
                "child activations a_i in [0, 1] (probabilities; pass "
                "logits through a sigmoid)",
            )
        ],
        what="activations",
    )
