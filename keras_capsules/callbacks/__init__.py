"""Schedules the papers need during training."""

from keras_capsules.callbacks.inverse_temperature_schedule import (
    InverseTemperatureSchedule,
)
from keras_capsules.callbacks.spread_loss_margin import (
    SigmoidSpreadLossMargin,
    SpreadLossMargin,
)

__all__ = [
    "InverseTemperatureSchedule",
    "SigmoidSpreadLossMargin",
    "SpreadLossMargin",
]
