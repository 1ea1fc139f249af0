"""Capsule networks for Keras 3: layers, routing ops, trainers and datasets.

The callbacks, layers, losses, models and ops import on every Keras
backend (their tests run on TensorFlow, JAX and PyTorch) and are imported
with the package; the datasets, metrics and plots (every backend too)
load at their first use.
The parts that still need TensorFlow (`tensorflow_parts.PARTS`) load at
their first use; on TensorFlow, those this package always imported are
imported with it, which registers their saved classes for
`keras.saving.load_model`.
"""

import importlib

import keras

__version__ = "0.1.0"

from keras_capsules import (  # noqa: E402
    callbacks,
    layers,
    losses,
    models,
    ops,
)
from keras_capsules.tensorflow_parts import PARTS  # noqa: E402

# The subpackages imported at their first use.
_LAZY = ("datasets", "metrics", "plots", *PARTS)

__all__ = [
    "callbacks",
    "datasets",
    "distributions",
    "layers",
    "losses",
    "metrics",
    "models",
    "ops",
    "plots",
    "recipes",
    "__version__",
]


def __getattr__(name):
    """Imports a subpackage of `_LAZY` at its first use."""
    if name in _LAZY:
        return importlib.import_module(f"keras_capsules.{name}")
    raise AttributeError(f"module 'keras_capsules' has no attribute {name!r}")


if keras.backend.backend() == "tensorflow":
    # The saved classes live in these (`datasets` and `trainers` hold none).
    for _part in ("distributions", "recipes"):
        importlib.import_module(f"keras_capsules.{_part}")
