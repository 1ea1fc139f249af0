"""The inverse-temperature schedule of EM routing layers: one `lambda`
per iteration, held in a non-trainable weight so callbacks can change it
during training and saved models keep it."""

import keras

# lambda of the last iteration by default. The paper fixes no value. Its
# cost sum_h (beta_u + log sigma^h) sum_i R_ij grows with the number of
# children: in the small model's class capsules it is about -440 at
# initialisation, so lambda = 0.01 already gives every class a_j = 0.99
# and MNIST accuracy was 13% after 300 steps; 0.001 starts near a_j = 0.64
# and reached 81.6% after one epoch (measured, small model, batch 32).
DEFAULT_FINAL_INVERSE_TEMPERATURE = 0.001


# The official code's schedule over iterations: lambda_t = final (1 -
# GEOMETRIC_RATIO^(t + 1)).
GEOMETRIC_RATIO = 0.95
SCHEDULES = ("linear", "geometric")


def linear_inverse_temperatures(num_iterations, final):
    """`lambda_t = final (t + 1) / T`, `t = 0 .. T - 1`: rising linearly to
    `final` over `T = num_iterations` iterations."""
    return [final * (t + 1) / num_iterations for t in range(num_iterations)]


def geometric_inverse_temperatures(num_iterations, final):
    """`lambda_t = final (1 - 0.95^(t + 1))`: the official code's schedule
    (0.05, 0.0975, 0.143 of `final` for three iterations)."""
    return [
        final * (1.0 - GEOMETRIC_RATIO ** (t + 1))
        for t in range(num_iterations)
    ]


def inverse_temperature_schedule(name, num_iterations, final):
    """The `name`d schedule (one of `SCHEDULES`) of `num_iterations`
    values."""
    if name not in SCHEDULES:
        raise ValueError(
            f"Unknown inverse-temperature schedule {name!r}. Expected one "
            f"of {SCHEDULES}."
        )
    if name == "linear":
        return linear_inverse_temperatures(num_iterations, final)
    return geometric_inverse_temperatures(num_iterations, final)


def default_inverse_temperatures(num_iterations):
    """`lambda_t = lambda_final (t + 1) / T`: rising linearly to
    `DEFAULT_FINAL_INVERSE_TEMPERATURE` over `T` iterations."""
    return linear_inverse_temperatures(
        num_iterations, DEFAULT_FINAL_INVERSE_TEMPERATURE
    )


def resolve(layer, num_iterations, inverse_temperatures):
    """The schedule as a list of floats, checked against `num_iterations`."""
    if inverse_temperatures is None:
        return default_inverse_temperatures(num_iterations)
    schedule = [float(value) for value in inverse_temperatures]
    if len(schedule) != num_iterations or min(schedule) <= 0:
        raise ValueError(
            f"`{type(layer).__name__}` expects `inverse_temperatures` to "
            f"hold num_iterations={num_iterations} positive values, one per "
            f"iteration. Received: {inverse_temperatures!r}. Leave it None "
            "for the default schedule."
        )
    return schedule


def add_weight(layer):
    """Adds `layer.inverse_temperature_weight`, `(num_iterations,)`."""
    layer.inverse_temperature_weight = layer.add_weight(
        name="inverse_temperatures",
        shape=(layer.num_iterations,),
        initializer=keras.initializers.Constant(layer.inverse_temperatures),
        trainable=False,
        dtype="float32",
    )
