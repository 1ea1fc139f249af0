"""Reference architectures built from the layers.

The builders of the classifiers (`capsule_classifier`, `capsnet`,
`matrix_capsnet`, the Heinsen models and the backbones) import on every
Keras backend, and their models train, predict, save and load on each
(`CapsNet` has a training step of its own on TensorFlow and adds its
reconstruction loss in `compute_loss` elsewhere). The generative models,
the VAE and the posterior measures build on TensorFlow Probability and a
TensorFlow training step: on TensorFlow they import with the package; on
another backend, their first use raises an ImportError that says so.
"""

import keras

from keras_capsules.models.capsnet import CapsNet, capsnet
from keras_capsules.models.capsnet_config import CapsNetConfig
from keras_capsules.models.capsule_classifier import (
    ROUTINGS,
    capsule_classifier,
    classifier_loss,
    default_backbone,
)
from keras_capsules.models.efficient_capsnet import (
    EfficientCapsNet,
    EfficientCapsNetConfig,
    efficient_capsnet,
    efficient_capsnet_backbone,
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
from keras_capsules.tensorflow_parts import tensorflow_only_names

if keras.backend.backend() == "tensorflow":
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
    from keras_capsules.models.posterior_measures import (
        expected_presence_count,
        presence_information,
        selection_information,
        top_layer_features,
    )
    from keras_capsules.models.vae import VariationalAutoencoder
else:
    __getattr__ = tensorflow_only_names(
        __name__,
        (
            "GenerativeCapsuleAutoencoder",
            "GenerativeCapsuleConfig",
            "VariationalAutoencoder",
            "expected_presence_count",
            "generative_capsule_autoencoder",
            "presence_information",
            "selection_information",
            "template_encoder",
            "top_encoder",
            "top_layer_features",
        ),
    )

__all__ = [
    "CapsNet",
    "CapsNetConfig",
    "EfficientCapsNet",
    "EfficientCapsNetConfig",
    "GenerativeCapsuleAutoencoder",
    "GenerativeCapsuleConfig",
    "ROUTINGS",
    "VariationalAutoencoder",
    "capsnet",
    "capsnet_backbone",
    "capsule_classifier",
    "classifier_loss",
    "default_backbone",
    "efficient_capsnet",
    "efficient_capsnet_backbone",
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
