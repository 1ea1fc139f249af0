"""Training procedures that are not SGD: capsule-regression EM,
test-time variational inference."""

from keras_capsules.tensorflow_parts import require_tensorflow

require_tensorflow(__name__)

from keras_capsules.trainers.architectures import ARCHITECTURES
from keras_capsules.trainers.capsule_regression_em import CapsuleRegressionEM
from keras_capsules.trainers.em_schedule import (
    PAPER_PATIENCE,
    PAPER_THRESHOLDS,
    EMSchedule,
)
from keras_capsules.trainers.free_form_inference import (
    FREE_FORM_LEARNING_RATES,
    FREE_FORM_OPTIMIZERS,
    REFINED_PARTS,
    FreeFormInference,
    free_form_inference,
)
from keras_capsules.trainers.linear_probe import linear_probe_accuracy

__all__ = [
    "ARCHITECTURES",
    "CapsuleRegressionEM",
    "EMSchedule",
    "FREE_FORM_LEARNING_RATES",
    "FREE_FORM_OPTIMIZERS",
    "FreeFormInference",
    "PAPER_PATIENCE",
    "PAPER_THRESHOLDS",
    "REFINED_PARTS",
    "free_form_inference",
    "linear_probe_accuracy",
]
