"""Capsule networks for Keras 3: layers, routing ops, trainers and datasets."""

__version__ = "0.1.0"

from keras_capsules import layers, losses, models, ops, recipes  # noqa: E402

__all__ = ["layers", "losses", "models", "ops", "recipes", "__version__"]
