"""Training procedures that are not SGD: capsule-regression EM,
test-time variational inference."""

from keras_capsules.trainers.architectures import ARCHITECTURES
from keras_capsules.trainers.capsule_regression_em import (
    PAPER_PATIENCE,
    PAPER_THRESHOLDS,
    CapsuleRegressionEM,
)
from keras_capsules.trainers.free_form_inference import (
    REFINED_PARTS,
    free_form_inference,
)
from keras_capsules.trainers.linear_probe import linear_probe_accuracy

__all__ = [
    "ARCHITECTURES",
    "CapsuleRegressionEM",
    "PAPER_PATIENCE",
    "PAPER_THRESHOLDS",
    "REFINED_PARTS",
    "free_form_inference",
    "linear_probe_accuracy",
]
