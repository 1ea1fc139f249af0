"""Keras layers: weights, configuration, masks and dtype policy."""

from keras_capsules.layers.capsule_length import CapsuleLength
from keras_capsules.layers.capsule_mask import CapsuleMask
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.layers.dynamic_routing import DynamicRouting
from keras_capsules.layers.primary_capsules import PrimaryCapsules

__all__ = [
    "CapsuleLength",
    "CapsuleMask",
    "CapsuleRegression",
    "DynamicRouting",
    "PrimaryCapsules",
]
