"""Training procedures that are not SGD: capsule-regression EM."""

from keras_capsules.trainers.architectures import ARCHITECTURES
from keras_capsules.trainers.capsule_regression_em import (
    PAPER_PATIENCE,
    PAPER_THRESHOLDS,
    CapsuleRegressionEM,
)

__all__ = [
    "ARCHITECTURES",
    "CapsuleRegressionEM",
    "PAPER_PATIENCE",
    "PAPER_THRESHOLDS",
]
