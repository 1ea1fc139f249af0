"""TensorFlow's fast paths, by the names the ops ask
`keras_capsules.ops.fast_paths` for."""

from keras_capsules.backend.tensorflow.checks import checked
from keras_capsules.backend.tensorflow.compilation import (
    compiled_by_xla,
    written_once,
)
from keras_capsules.backend.tensorflow.dynamic_routing import (
    routed_capsules,
)
from keras_capsules.backend.tensorflow.em_gradient_probes import (
    gradient_probes,
)
from keras_capsules.backend.tensorflow.em_moments import weighted_moments
from keras_capsules.backend.tensorflow.small_matmul import small_matmul

__all__ = [
    "checked",
    "compiled_by_xla",
    "gradient_probes",
    "routed_capsules",
    "small_matmul",
    "weighted_moments",
    "written_once",
]
