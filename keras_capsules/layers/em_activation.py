"""What the EM routing layers share: the inverse-temperature schedule,
how a parent's cost becomes its activation (`ops.em_routing`'s keywords),
the weights `beta_u`, `beta_a` and their config."""

from keras_capsules.layers import inverse_temperatures as schedules
from keras_capsules.layers import validation
from keras_capsules.ops.em_routing import ActivationCost

COST_NORMALIZATIONS = (
    "none",
    "per_child",
    "per_mass",
    "standardize",
    "per_mass_standardize",
)


def set_arguments(
    layer,
    inverse_temperatures,
    activation_bias_gain,
    cost_normalization,
    floor,
    assignment_smoothing,
    num_parent_types,
):
    """Checks the arguments and stores them as same-named attributes.

    Args:
        layer: the EM layer being constructed, with its `num_iterations`.
        inverse_temperatures: one `lambda` per iteration, or None for
            `inverse_temperatures.default_inverse_temperatures`.
        activation_bias_gain: float `g > 0`, `beta_a`'s gain in the logit.
        cost_normalization: `"none"` (Procedure 1), `"per_child"` (the
            cost divided by the number of children per parent),
            `"per_mass"` (without the factor `sum_i R_ij`), `"standardize"`
            (z-scores across the parent types) or `"per_mass_standardize"`
            (both).
        floor: float `> 0`, the variance floor.
        assignment_smoothing: float in `[0, 1)`, the share of each child's
            uniform assignment kept in every M-step after the first.
        num_parent_types: int, the output capsule types whose costs are
            standardised together. Standardising needs 3 or more: the
            z-scores of two costs are -1 and +1 (of one, 0) whatever the
            costs, so no gradient would reach them and routing could not
            learn which parent to activate.
    """
    validation.check_option(
        layer, "cost_normalization", cost_normalization, COST_NORMALIZATIONS
    )
    standardized = cost_normalization.endswith("standardize")
    if standardized and num_parent_types is not None and num_parent_types < 3:
        raise ValueError(
            f"`{type(layer).__name__}` with "
            f"cost_normalization={cost_normalization!r} needs at least 3 "
            "output capsule types: the z-scores of two costs are -1 and +1 "
            "whatever the costs, so the costs would get no gradient. "
            f"Received {num_parent_types}. Use "
            "cost_normalization='per_child' for fewer types."
        )
    ActivationCost(
        activation_bias_gain=activation_bias_gain,
        variance_floor=floor,
        assignment_smoothing=assignment_smoothing,
    ).check(type(layer).__name__)
    layer.inverse_temperatures = schedules.resolve(
        layer, layer.num_iterations, inverse_temperatures
    )
    layer.activation_bias_gain = float(activation_bias_gain)
    layer.cost_normalization = cost_normalization
    layer.variance_floor = float(floor)
    layer.assignment_smoothing = float(assignment_smoothing)


def op_arguments(layer, children_per_parent):
    """The keyword arguments of `ops.em_routing` / `ops.conv_em_routing`."""
    scale = 1.0
    if layer.cost_normalization == "per_child":
        if children_per_parent is None:
            raise ValueError(
                f"`{layer.name}` with cost_normalization='per_child' needs "
                "a known number of input capsules. Received inputs whose "
                "capsule count is unknown until run time. Give the model a "
                "fixed input shape, or use cost_normalization='standardize'."
            )
        scale = 1.0 / children_per_parent
    return {
        "activation_bias_gain": layer.activation_bias_gain,
        "cost_scale": scale,
        "cost_per_mass": layer.cost_normalization.startswith("per_mass"),
        "standardize_costs": layer.cost_normalization.endswith("standardize"),
        "variance_floor": layer.variance_floor,
        "assignment_smoothing": layer.assignment_smoothing,
    }


def add_weights(layer, num_parent_types):
    """Adds `beta_u`, `beta_a` (one per parent type, zeros) and the
    non-trainable `inverse_temperature_weight`."""
    for name in ("beta_u", "beta_a"):
        setattr(
            layer,
            name,
            layer.add_weight(
                name=name, shape=(num_parent_types,), initializer="zeros"
            ),
        )
    schedules.add_weight(layer)


def config(layer):
    """The `get_config` entries of the arguments."""
    return {
        "inverse_temperatures": layer.inverse_temperatures,
        "activation_bias_gain": layer.activation_bias_gain,
        "cost_normalization": layer.cost_normalization,
        "variance_floor": layer.variance_floor,
        "assignment_smoothing": layer.assignment_smoothing,
    }
