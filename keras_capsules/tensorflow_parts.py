"""The parts of the library that still need TensorFlow, and the error
that a user without it meets.

The callbacks, layers, losses, metrics, models, ops and plots import on
every Keras backend (a few of their names run on TensorFlow only:
`tensorflow_only_names`). The parts below build on `tf.data`,
`tf.distribute`, TensorFlow Probability or TensorFlow's training step;
each checks for TensorFlow before its imports.
"""

import importlib
import importlib.util

import keras

# Subpackages of keras_capsules that need TensorFlow.
PARTS = (
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
            "on every Keras backend: keras_capsules.callbacks, .layers, "
            ".losses, .metrics, .models, .ops and .plots."
        )


def tensorflow_only_names(package, names):
    """The module `__getattr__` of a package that runs on every backend
    but for `names` (`{name: submodule}`), which run on Keras's TensorFlow
    backend only: on TensorFlow it imports `package.submodule` and returns
    its `name`; on another backend it raises an ImportError that says
    so. Call `bind_tensorflow_only_names` at the package's end."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            )
        backend = keras.backend.backend()
        if backend != "tensorflow":
            raise ImportError(
                f"`{package}.{name}` runs on Keras's TensorFlow backend "
                f"only; this process runs {backend!r}. Set "
                "KERAS_BACKEND=tensorflow (with TensorFlow installed) "
                "before importing Keras."
            )
        module = importlib.import_module(f"{package}.{names[name]}")
        return getattr(module, name)

    return __getattr__


def bind_tensorflow_only_names(namespace, names):
    """On TensorFlow, imports each of `names` into `namespace` (a
    package's `globals()`, whose `__getattr__` is `tensorflow_only_names`)
    now: this registers their saved classes for `keras.saving.load_model`
    and binds each name over a submodule of the same name."""
    if keras.backend.backend() == "tensorflow":
        for name in names:
            namespace[name] = namespace["__getattr__"](name)
