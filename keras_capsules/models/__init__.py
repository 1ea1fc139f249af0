"""Reference architectures built from the layers."""

from keras_capsules.tensorflow_parts import require_tensorflow

require_tensorflow(__name__)

from keras_capsules.models.capsnet import CapsNet, capsnet
from keras_capsules.models.capsnet_config import CapsNetConfig
from keras_capsules.models.capsule_classifier import (
    ROUTINGS,
    capsule_classifier,
    classifier_loss,
    default_backbone,
)
from keras_capsules.models.generative_capsule_autoencoder import (
    GenerativeCapsuleAutoencoder,
)
from keras_capsules.models.generative_capsule_config import (
    GenerativeCapsuleConfig,
)
from keras_capsules.models.generative_capsules import (
    generative_capsule_autoencoder,
    template_encoder,
    top_encoder,
)
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
from keras_capsules.models.paper_backbones import (
    capsnet_backbone,
    heinsen_image_backbone,
    matrix_capsnet_backbone,
)
from keras_capsules.models.posterior_measures import (
    expected_presence_count,
    presence_information,
    selection_information,
    top_layer_features,
)
from keras_capsules.models.vae import VariationalAutoencoder

__all__ = [
    "ROUTINGS",
    "CapsNet",
    "CapsNetConfig",
    "GenerativeCapsuleAutoencoder",
    "GenerativeCapsuleConfig",
    "VariationalAutoencoder",
    "capsnet",
    "capsnet_backbone",
    "capsule_classifier",
    "classifier_loss",
    "default_backbone",
    "expected_presence_count",
    "generative_capsule_autoencoder",
    "heinsen_image",
    "heinsen_image_backbone",
    "heinsen_sequence",
    "matrix_capsnet",
    "matrix_capsnet_backbone",
    "presence_information",
    "selection_information",
    "small_matrix_capsnet",
    "template_encoder",
    "token_embedder",
    "top_encoder",
    "top_layer_features",
    "viewpoint_cnn",
]
