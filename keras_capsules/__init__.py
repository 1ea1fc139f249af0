"""Capsule networks for Keras 3: layers, routing ops, trainers and datasets."""

__version__ = "0.1.0"

from keras_capsules import (  # noqa: E402
    callbacks,
    distributions,
    layers,
    losses,
    models,
    ops,
    recipes,
)

__all__ = [
    "callbacks",
    "distributions",
    "layers",
    "losses",
    "models",
    "ops",
    "recipes",
    "__version__",
]
