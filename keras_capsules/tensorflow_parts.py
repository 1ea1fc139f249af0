"""The parts of the library that still need TensorFlow, and the error
that a user without it meets.

The callbacks, datasets, layers, losses, metrics, models, ops and plots
import on every Keras backend (a few models run on TensorFlow only:
`tensorflow_only_names`; a few datasets need TensorFlow installed:
`missing_tensorflow_names`). The parts below build on `tf.data`,
`tf.distribute`, TensorFlow Probability or TensorFlow's training step;
each checks for TensorFlow before its imports.
"""

import importlib
import importlib.util

import keras

# Subpackages of keras_capsules that need TensorFlow.
PARTS = (
    "distributions",
    "recipes",
    "trainers",
)


def tensorflow_installed():
    """Whether TensorFlow can be imported here (it is not imported)."""
    return importlib.util.find_spec("tensorflow") is not None


def require_tensorflow(part):
    """Raises an ImportError that names what to install, where TensorFlow
    is not installed; `part` names what needs it."""
    if not tensorflow_installed():
        raise ImportError(
            f"`{part}` needs TensorFlow, which is not installed in this "
            "environment. Install it (`pip install tensorflow "
            "tensorflow-probability[tf] tensorflow-datasets`, as "
            "keras_capsules's requirements.txt), or use the parts that run "
            "on every Keras backend: keras_capsules.callbacks, .layers, "
            ".losses, .metrics, .models, .ops, .plots and the in-memory "
            "parts of .datasets."
        )


def tensorflow_only_names(package, names):
    """The module `__getattr__` of a package, for a backend other than
    TensorFlow, whose `names` (parts that run on Keras's TensorFlow
    backend only) raise an ImportError that says so."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            )
        raise ImportError(
            f"`{package}.{name}` runs on Keras's TensorFlow backend "
            f"only; this process runs {keras.backend.backend()!r}. Set "
            "KERAS_BACKEND=tensorflow (with TensorFlow installed) "
            "before importing Keras."
        )

    return __getattr__


def missing_tensorflow_names(package, names):
    """The module `__getattr__` of a package, for where TensorFlow is not
    installed, whose `names` (parts that build on `tf.data` or TensorFlow
    Datasets, with any Keras backend) raise `require_tensorflow`'s
    ImportError."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            )
        require_tensorflow(f"{package}.{name}")

    return __getattr__
