"""Pure tensor functions: every equation of the library lives here."""

from keras_capsules.ops.capsule_regression import (
    capsule_regression_posterior_means,
    capsule_regression_probabilities,
)
from keras_capsules.ops.capsule_votes import (
    capsule_votes,
    conv_capsule_vote_means,
    conv_capsule_votes,
)
from keras_capsules.ops.conv_em_routing import (
    conv_em_routing,
    conv_em_routing_by_parent,
)
from keras_capsules.ops.digamma import digamma
from keras_capsules.ops.dynamic_routing import dynamic_routing
from keras_capsules.ops.em_activation_cost import ActivationCost
from keras_capsules.ops.em_routing import em_routing, em_routing_trace
from keras_capsules.ops.heinsen_routing import heinsen_routing
from keras_capsules.ops.heinsen_routing_linear import heinsen_routing_linear
from keras_capsules.ops.interpolating_coefficient import (
    interpolating_coefficient,
    interpolating_coefficients,
)
from keras_capsules.ops.inverted_attention_routing import (
    inverted_attention_routing,
)
from keras_capsules.ops.margin_loss import margin_loss
from keras_capsules.ops.self_attention_routing import self_attention_routing
from keras_capsules.ops.self_routing import self_routing
from keras_capsules.ops.spectral_convolution import spectral_conv2d
from keras_capsules.ops.spread_loss import spread_loss
from keras_capsules.ops.squash import (
    exponential_squash,
    safe_norm,
    squash,
    squashed_length_logit,
)
from keras_capsules.ops.uniform_routing import uniform_routing
from keras_capsules.ops.variational_bayes_routing import (
    variational_bayes_routing,
)

__all__ = [
    "ActivationCost",
    "capsule_regression_posterior_means",
    "capsule_regression_probabilities",
    "capsule_votes",
    "conv_capsule_vote_means",
    "conv_capsule_votes",
    "conv_em_routing",
    "conv_em_routing_by_parent",
    "digamma",
    "dynamic_routing",
    "em_routing",
    "em_routing_trace",
    "exponential_squash",
    "heinsen_routing",
    "heinsen_routing_linear",
    "interpolating_coefficient",
    "interpolating_coefficients",
    "inverted_attention_routing",
    "margin_loss",
    "safe_norm",
    "self_attention_routing",
    "self_routing",
    "spectral_conv2d",
    "spread_loss",
    "squash",
    "squashed_length_logit",
    "uniform_routing",
    "variational_bayes_routing",
]
