"""Reference architectures built from the layers."""

from keras_capsules.models.capsnet import CapsNet, capsnet

__all__ = ["CapsNet", "capsnet"]
