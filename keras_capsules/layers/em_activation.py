"""What the EM routing layers share: their `EMRouting` settings, the
weights `beta_u`, `beta_a` and the inverse temperatures, and the config
entry of the settings."""

import keras

from keras_capsules.layers.em_routing_settings import EMRouting


def set_routing(layer, routing, num_parent_types):
    """Stores `EMRouting.get(routing)` as `layer.routing`, after checking
    that standardised costs have 3 or more parent types to spread over:
    the z-scores of two costs are -1 and +1 (of one, 0) whatever the
    costs, so no gradient would reach them and routing could not learn
    which parent to activate."""
    routing = EMRouting.get(routing)
    if routing.standardizes_costs and num_parent_types < 3:
        raise ValueError(
            f"`{type(layer).__name__}` with "
            f"cost_normalization={routing.cost_normalization!r} needs at "
            "least 3 output capsule types: the z-scores of two costs are "
            "-1 and +1 whatever the costs, so the costs would get no "
            f"gradient. Received {num_parent_types}. Use "
            "cost_normalization='per_child' for fewer types."
        )
    layer.routing = routing


def op_cost(layer, children_per_parent):
    """The `cost` argument of `ops.em_routing` / `ops.conv_em_routing`."""
    if children_per_parent is None:
        if layer.routing.cost_normalization == "per_child":
            raise ValueError(
                f"`{layer.name}` with cost_normalization='per_child' needs "
                "a known number of input capsules. Received inputs whose "
                "capsule count is unknown until run time. Give the model a "
                "fixed input shape, or use cost_normalization='standardize'."
            )
        children_per_parent = 1
    return layer.routing.cost(children_per_parent)


def add_weights(layer, num_parent_types):
    """Adds `beta_u`, `beta_a` (one per parent type, zeros) and the
    non-trainable `inverse_temperature_weight`, one `lambda` per
    iteration, which `callbacks.InverseTemperatureSchedule` may change
    during training and saved models keep."""
    for name in ("beta_u", "beta_a"):
        setattr(
            layer,
            name,
            layer.add_weight(
                name=name, shape=(num_parent_types,), initializer="zeros"
            ),
        )
    layer.inverse_temperature_weight = layer.add_weight(
        name="inverse_temperatures",
        shape=(layer.routing.num_iterations,),
        initializer=keras.initializers.Constant(
            layer.routing.inverse_temperatures
        ),
        trainable=False,
        dtype="float32",
    )


def config(layer):
    """The `get_config` entry of the settings."""
    return {"routing": layer.routing.get_config()}
