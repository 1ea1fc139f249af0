"""Reference architectures built from the layers."""

from keras_capsules.models.capsnet import CapsNet, capsnet
from keras_capsules.models.heinsen import (
    heinsen_image,
    heinsen_sequence,
    token_embedder,
)
from keras_capsules.models.matrix_capsnet import (
    matrix_capsnet,
    small_matrix_capsnet,
    viewpoint_cnn,
)

__all__ = [
    "CapsNet",
    "capsnet",
    "heinsen_image",
    "heinsen_sequence",
    "matrix_capsnet",
    "small_matrix_capsnet",
    "token_embedder",
    "viewpoint_cnn",
]
