"""Reference architectures built from the layers.

The builders of the classifiers (`capsule_classifier`, `capsnet`,
`matrix_capsnet`, the Heinsen models and the backbones) import on every
Keras backend: their models predict, save and load on each, and those
without a training step of their own train on each. `CapsNet`'s own
training step is TensorFlow's. The generative models, the VAE and the
posterior measures build on TensorFlow Probability and a TensorFlow
training step: on TensorFlow they import with the package; on another
backend at first use, which raises an ImportError that says so.
"""

import importlib

import keras

from keras_capsules.models.capsnet import CapsNet, capsnet
from keras_capsules.models.capsnet_config import CapsNetConfig
from keras_capsules.models.capsule_classifier import (
    ROUTINGS,
    capsule_classifier,
    classifier_loss,
    default_backbone,
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

# The names that need TensorFlow, by the module that holds each.
_TENSORFLOW_ONLY = {
    "GenerativeCapsuleAutoencoder": "generative_capsule_autoencoder",
    "GenerativeCapsuleConfig": "generative_capsule_config",
    "VariationalAutoencoder": "vae",
    "expected_presence_count": "posterior_measures",
    "generative_capsule_autoencoder": "generative_capsules",
    "presence_information": "posterior_measures",
    "selection_information": "posterior_measures",
    "template_encoder": "generative_capsules",
    "top_encoder": "generative_capsules",
    "top_layer_features": "posterior_measures",
}


def __getattr__(name):
    """Imports a name that needs TensorFlow at its first use."""
    if name not in _TENSORFLOW_ONLY:
        raise AttributeError(
            f"module 'keras_capsules.models' has no attribute {name!r}"
        )
    if keras.backend.backend() != "tensorflow":
        raise ImportError(
            f"`keras_capsules.models.{name}` runs on Keras's TensorFlow "
            f"backend only; this process runs {keras.backend.backend()!r}. "
            "Set KERAS_BACKEND=tensorflow (with TensorFlow and TensorFlow "
            "Probability installed) before importing Keras."
        )
    module = importlib.import_module(
        f"keras_capsules.models.{_TENSORFLOW_ONLY[name]}"
    )
    return getattr(module, name)


if keras.backend.backend() == "tensorflow":
    # Registers their saved classes for `keras.saving.load_model`, and
    # binds each name over the submodule of the same name that importing
    # it binds (`generative_capsule_autoencoder`).
    for _name in _TENSORFLOW_ONLY:
        globals()[_name] = __getattr__(_name)

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
