"""Keras layers: weights, configuration, masks and dtype policy."""

from keras_capsules.layers.attentive_pooling import AttentivePooling
from keras_capsules.layers.capsule_embedding import CapsuleEmbedding
from keras_capsules.layers.capsule_length import CapsuleLength
from keras_capsules.layers.capsule_mask import CapsuleMask
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.layers.conv_matrix_capsules import ConvMatrixCapsules
from keras_capsules.layers.coordinate_channels import CoordinateChannels
from keras_capsules.layers.depth_embedding import DepthEmbedding
from keras_capsules.layers.dynamic_routing import DynamicRouting
from keras_capsules.layers.generative_capsule_decoder import (
    GenerativeCapsuleDecoder,
)
from keras_capsules.layers.heinsen_routing import HeinsenRouting
from keras_capsules.layers.induced_set_attention import InducedSetAttention
from keras_capsules.layers.matrix_capsule_em_routing import (
    MatrixCapsuleEMRouting,
)
from keras_capsules.layers.pooling_by_multihead_attention import (
    PoolingByMultiheadAttention,
)
from keras_capsules.layers.presence_scores import PresenceScores
from keras_capsules.layers.primary_capsules import PrimaryCapsules
from keras_capsules.layers.primary_matrix_capsules import (
    PrimaryMatrixCapsules,
)

__all__ = [
    "AttentivePooling",
    "CapsuleEmbedding",
    "CapsuleLength",
    "CapsuleMask",
    "CapsuleRegression",
    "ConvMatrixCapsules",
    "CoordinateChannels",
    "DepthEmbedding",
    "DynamicRouting",
    "GenerativeCapsuleDecoder",
    "HeinsenRouting",
    "InducedSetAttention",
    "MatrixCapsuleEMRouting",
    "PoolingByMultiheadAttention",
    "PresenceScores",
    "PrimaryCapsules",
    "PrimaryMatrixCapsules",
]
