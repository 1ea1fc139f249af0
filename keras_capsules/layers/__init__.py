"""Keras layers: weights, configuration, masks and dtype policy."""

from keras_capsules.layers.capsule_regression import CapsuleRegression

__all__ = ["CapsuleRegression"]
