"""Schedules the papers need during training, and a backup that resumes
a killed run where it was (TensorFlow only: it resumes `tf.data`
pipelines)."""

from keras_capsules.callbacks.inverse_temperature_schedule import (
    InverseTemperatureSchedule,
)
from keras_capsules.callbacks.spread_loss_margin import (
    SigmoidSpreadLossMargin,
    SpreadLossMargin,
)
from keras_capsules.tensorflow_parts import (
    bind_tensorflow_only_names,
    tensorflow_only_names,
)

_TENSORFLOW_ONLY = {"ResumableBackup": "resumable_backup"}
__getattr__ = tensorflow_only_names(__name__, _TENSORFLOW_ONLY)
bind_tensorflow_only_names(globals(), _TENSORFLOW_ONLY)

__all__ = [
    "InverseTemperatureSchedule",
    "ResumableBackup",
    "SigmoidSpreadLossMargin",
    "SpreadLossMargin",
]
