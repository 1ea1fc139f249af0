"""Losses of the capsule papers."""

from keras_capsules.losses.activation_log_loss import ActivationLogLoss
from keras_capsules.losses.class_capsule_loss import ClassCapsuleLoss
from keras_capsules.losses.margin_loss import MarginLoss
from keras_capsules.losses.reconstruction_loss import ReconstructionLoss
from keras_capsules.losses.spread_loss import SpreadLoss

__all__ = [
    "ActivationLogLoss",
    "ClassCapsuleLoss",
    "MarginLoss",
    "ReconstructionLoss",
    "SpreadLoss",
]
