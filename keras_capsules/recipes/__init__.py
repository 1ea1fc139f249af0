"""Training recipes from the papers: mixup, the one-cycle schedule, RAdam;
and a training step that takes each batch's gradient in parts."""

from keras_capsules.tensorflow_parts import require_tensorflow

require_tensorflow(__name__)

from keras_capsules.recipes.batch_parts import BatchPartsModel
from keras_capsules.recipes.mixup import MixupClassifier, mixup
from keras_capsules.recipes.one_cycle import (
    AUTHOR_BETA_1,
    PAPER_TEXT_BETA_1,
    OneCycle,
    one_cycle_radam,
)
from keras_capsules.recipes.radam import RAdam

__all__ = [
    "AUTHOR_BETA_1",
    "BatchPartsModel",
    "PAPER_TEXT_BETA_1",
    "MixupClassifier",
    "OneCycle",
    "RAdam",
    "mixup",
    "one_cycle_radam",
]
