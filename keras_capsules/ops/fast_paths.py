"""The one dispatch from the ops to a backend's fast paths.

Every op is its paper's equations in `keras.ops`, and that neutral form
runs on every Keras backend. Where one backend runs an op faster another
way, the op asks here for that backend's form by name. TensorFlow's live
in `keras_capsules/backend/tensorflow/`: hand-written gradients, a matrix
product of lower per-call cost, tensors XLA writes out once, and graph
assertions. PyTorch's (`backend/torch/`) keep float64 where Keras's
PyTorch backend computes in float32. Each is tested equal to the neutral
form, values and gradients, in every mode it runs in (`tests/backend/`).
"""

import contextlib
import importlib

import keras

# The package of fast paths of each backend that has them.
_PACKAGES = {
    "tensorflow": "keras_capsules.backend.tensorflow",
    "torch": "keras_capsules.backend.torch",
}
# Every name an op may ask for; a backend has forms for some of them.
NAMES = frozenset(
    {
        "checked",
        "compiled_by_xla",
        "gradient_probes",
        "matmul",
        "maximum",
        "minimum",
        "routed_capsules",
        "small_matmul",
        "weighted_moments",
        "written_once",
    }
)
# Whether `neutral_forms()` is active.
_NEUTRAL_ONLY = [False]


def fast_path(name):
    """The running backend's fast form `name`, or None where it has none
    (and inside `neutral_forms()`): the caller then takes its neutral
    form. The backend's package is imported at the first call, so that
    on JAX or PyTorch neither it nor TensorFlow is."""
    if name not in NAMES:
        raise ValueError(
            f"No op has a fast path named {name!r}. Known names: "
            f"{sorted(NAMES)}."
        )
    package = _PACKAGES.get(keras.backend.backend())
    if package is None or _NEUTRAL_ONLY[0]:
        return None
    return getattr(importlib.import_module(package), name, None)


@contextlib.contextmanager
def neutral_forms():
    """Ops called or traced inside take their neutral forms on every
    backend: the reference each fast path is tested against.

    Examples:

        >>> with neutral_forms():
        ...     print(fast_path("small_matmul"))
        None
    """
    previous = _NEUTRAL_ONLY[0]
    _NEUTRAL_ONLY[0] = True
    try:
        yield
    finally:
        _NEUTRAL_ONLY[0] = previous
