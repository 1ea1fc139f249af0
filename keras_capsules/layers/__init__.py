"""Keras layers: weights, configuration, masks and dtype policy.

The capsule contract. A capsule layer maps

    [logits (batch, n_in), poses (batch, n_in, d_cov, d_in)], mask (batch, n_in)
      -> [logits (batch, n_out), poses (batch, n_out, d_cov, d_out)]

Capsule i is present with probability `sigmoid(logits[:, i])` in every
family: dynamic routing's length `|v| = |s|^2 / (1 + |s|^2)` is
`sigmoid(2 log |s|)`, EM routing's activation is the logistic of
`lambda (beta_a - cost)`, and Heinsen's scores are logits already. A pose
is a `d_cov x d` matrix (a vector capsule is `1 x d`); every family votes
`V[i, j] = P[i] W[i, j]` (`ops.capsule_votes`). A masked input capsule
(mask False, or a Keras mask) changes no output.

`DynamicRouting`, `MatrixCapsuleEMRouting` and `HeinsenRouting` speak the
contract with `contract=True` (their base, `CapsuleRouting`, holds what
they share), and so do the primary stages `PrimaryCapsules` and
`PrimaryMatrixCapsules`; without it each keeps the form its paper uses.
One backbone therefore takes any family: `models.capsule_classifier`.
"""

from keras_capsules.layers.attentive_pooling import AttentivePooling
from keras_capsules.layers.capsule_embedding import CapsuleEmbedding
from keras_capsules.layers.capsule_length import CapsuleLength
from keras_capsules.layers.capsule_mask import CapsuleMask
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.layers.capsule_routing import CapsuleRouting
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
    "CapsuleRouting",
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
