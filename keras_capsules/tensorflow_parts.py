"""The parts of the library that still need TensorFlow, and the error
that a user without it meets.

The layers, losses, metrics, models, ops and plots import on every Keras
backend (some models train on TensorFlow only: see
`keras_capsules.models`). The parts below build on `tf.data`,
`tf.distribute`, TensorFlow Probability or TensorFlow's training step;
each checks for TensorFlow before its imports.
"""

import importlib.util

# Subpackages of keras_capsules that need TensorFlow.
PARTS = (
    "callbacks",
    "datasets",
    "distributions",
    "recipes",
    "trainers",
)


def require_tensorflow(part):
    """Raises an ImportError that names what to install, where TensorFlow
    is not installed; `part` names what needs it."""
    if importlib.util.find_spec("tensorflow") is None:
        raise ImportError(
            f"`{part}` needs TensorFlow, which is not installed in this "
            "environment. Install it (`pip install tensorflow "
            "tensorflow-probability[tf] tensorflow-datasets`, as "
            "keras_capsules's requirements.txt), or use the parts that run "
            "on every Keras backend: keras_capsules.layers, .losses, "
            ".metrics, .models, .ops and .plots."
        )
