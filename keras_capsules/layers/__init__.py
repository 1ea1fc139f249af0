"""Keras layers: weights, configuration, masks and dtype policy."""

from keras_capsules.layers.capsule_length import CapsuleLength
from keras_capsules.layers.capsule_mask import CapsuleMask
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.layers.conv_matrix_capsules import ConvMatrixCapsules
from keras_capsules.layers.coordinate_channels import CoordinateChannels
from keras_capsules.layers.depth_embedding import DepthEmbedding
from keras_capsules.layers.dynamic_routing import DynamicRouting
from keras_capsules.layers.heinsen_routing import HeinsenRouting
from keras_capsules.layers.matrix_capsule_em_routing import (
    MatrixCapsuleEMRouting,
)
from keras_capsules.layers.presence_scores import PresenceScores
from keras_capsules.layers.primary_capsules import PrimaryCapsules
from keras_capsules.layers.primary_matrix_capsules import (
    PrimaryMatrixCapsules,
)

__all__ = [
    "CapsuleLength",
    "CapsuleMask",
    "CapsuleRegression",
    "ConvMatrixCapsules",
    "CoordinateChannels",
    "DepthEmbedding",
    "DynamicRouting",
    "HeinsenRouting",
    "MatrixCapsuleEMRouting",
    "PresenceScores",
    "PrimaryCapsules",
    "PrimaryMatrixCapsules",
]
