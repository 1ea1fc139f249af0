"""Inverse-temperature schedules of EM routing layers."""

import keras

from keras_capsules.callbacks.training_step import optimizer_step


def em_routing_layers(model):
    """Every layer of `model`, nested ones included, that holds an
    inverse-temperature weight."""
    found = []
    pending = list(model.layers)
    while pending:
        layer = pending.pop(0)
        if hasattr(layer, "inverse_temperature_weight"):
            found.append(layer)
        pending.extend(getattr(layer, "layers", []))
    return found


class InverseTemperatureSchedule(keras.callbacks.Callback):
    """Sets the routing inverse temperatures of every EM routing layer
    (`ConvMatrixCapsules`, `MatrixCapsuleEMRouting`) before each batch.

    The paper's `lambda` rises over the routing iterations on a fixed
    schedule; this callback also lets it change over training, e.g. to
    anneal from soft to hard assignments.

    Args:
        schedule: a function `(step, num_iterations) -> sequence of
            num_iterations floats`, called with the optimizer's step count,
            so a resumed run continues the schedule.

    Examples:

        >>> warm_up = InverseTemperatureSchedule(
        ...     lambda step, n: [min(1.0, step / 1000) * 0.001 * (t + 1) / n
        ...                      for t in range(n)])
    """

    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_train_begin(self, logs=None):
        self.layers = em_routing_layers(self.model)
        if not self.layers:
            raise ValueError(
                "`InverseTemperatureSchedule` found no EM routing layer in "
                "the model; expected `ConvMatrixCapsules` or "
                "`MatrixCapsuleEMRouting`."
            )

    def on_train_batch_begin(self, batch, logs=None):
        step = optimizer_step(self.model)
        for layer in self.layers:
            values = [
                float(v) for v in self.schedule(step, layer.num_iterations)
            ]
            if len(values) != layer.num_iterations:
                raise ValueError(
                    f"The schedule gave {len(values)} inverse temperatures for "
                    f"`{layer.name}`, which routes {layer.num_iterations} "
                    "iterations; give one per iteration."
                )
            layer.inverse_temperature_weight.assign(values)
