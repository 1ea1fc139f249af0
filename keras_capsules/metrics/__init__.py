"""Metrics of the capsule papers."""

from keras_capsules.metrics.present_classes_accuracy import (
    PresentClassesAccuracy,
)

__all__ = ["PresentClassesAccuracy"]
