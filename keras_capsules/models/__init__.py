"""Reference architectures built from the layers."""

from keras_capsules.models.capsnet import CapsNet, capsnet
from keras_capsules.models.heinsen import (
    heinsen_image,
    heinsen_sequence,
    token_embedder,
)

__all__ = [
    "CapsNet",
    "capsnet",
    "heinsen_image",
    "heinsen_sequence",
    "token_embedder",
]
