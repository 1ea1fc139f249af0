"""Keras layers: weights, configuration, masks and dtype policy.

The capsule contract. A routing layer maps

    [logits (batch, *capsules), poses (batch, *capsules, d_cov, d_in)],
        mask (batch, *capsules)
      -> [logits (batch, n_out), poses (batch, n_out, d_cov, d_out)]

where `capsules` is `(n_in,)` for a list or `(H, W, B)` for a grid of `B`
capsule types. Capsule i is present with probability `sigmoid(logits[...,
i])` in every family: dynamic routing's length `|v| = |s|^2 / (1 + |s|^2)`
is `sigmoid(2 log |s|)`, EM routing's activation is the logistic of
`lambda (beta_a - cost)`, and Heinsen's scores are logits already. A pose
is a `d_cov x d` matrix (a vector capsule is `1 x d`); every family votes
`V[i, j] = P[i] W[i, j]` (`ops.capsule_votes`). A masked input capsule
(mask False, or a Keras mask) changes no output.

`DynamicRouting`, `MatrixCapsuleEMRouting`, `HeinsenRouting`,
`SelfAttentionRouting`, `InvertedAttentionRouting`,
`VariationalBayesRouting`, `SelfRouting` and `UniformRouting` (their base,
`CapsuleRouting`, holds what they share) and `ConvMatrixCapsules` speak
the contract, and the primary stages `PrimaryCapsules` and
`PrimaryMatrixCapsules` produce it. One backbone therefore takes any
family: `models.capsule_classifier`. `.keras` files saved in the layers'
former forms load through `layers.legacy`.
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
from keras_capsules.layers.efficient_primary_capsules import (
    EfficientPrimaryCapsules,
)
from keras_capsules.layers.em_routing_settings import EMRouting
from keras_capsules.layers.flatten_capsules import FlattenCapsules
from keras_capsules.layers.generative_capsule_decoder import (
    GenerativeCapsuleDecoder,
)
from keras_capsules.layers.heinsen_routing import HeinsenRouting
from keras_capsules.layers.induced_set_attention import InducedSetAttention
from keras_capsules.layers.inverted_attention_routing import (
    InvertedAttentionRouting,
)
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
from keras_capsules.layers.self_attention_routing import SelfAttentionRouting
from keras_capsules.layers.self_routing import SelfRouting
from keras_capsules.layers.uniform_routing import UniformRouting
from keras_capsules.layers.variational_bayes_routing import (
    VariationalBayesRouting,
)

# Registers the adapters of the layers' former forms with Keras.
from keras_capsules.layers import legacy  # noqa: E402, F401  isort: skip

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
    "EMRouting",
    "EfficientPrimaryCapsules",
    "FlattenCapsules",
    "GenerativeCapsuleDecoder",
    "HeinsenRouting",
    "InducedSetAttention",
    "InvertedAttentionRouting",
    "MatrixCapsuleEMRouting",
    "PoolingByMultiheadAttention",
    "PresenceScores",
    "PrimaryCapsules",
    "PrimaryMatrixCapsules",
    "SelfAttentionRouting",
    "SelfRouting",
    "UniformRouting",
    "VariationalBayesRouting",
]
