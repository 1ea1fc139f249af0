"""Schedules the papers need during training, and a backup that resumes
a killed run where it was, on every Keras backend."""

from keras_capsules.callbacks.inverse_temperature_schedule import (
    InverseTemperatureSchedule,
)
from keras_capsules.callbacks.resumable_backup import ResumableBackup
from keras_capsules.callbacks.spread_loss_margin import (
    SigmoidSpreadLossMargin,
    SpreadLossMargin,
)

__all__ = [
    "InverseTemperatureSchedule",
    "ResumableBackup",
    "SigmoidSpreadLossMargin",
    "SpreadLossMargin",
]
