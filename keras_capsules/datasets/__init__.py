"""Datasets: TFDS loaders, the built-in procedural dataset, projections."""

from keras_capsules.tensorflow_parts import require_tensorflow

require_tensorflow(__name__)

from keras_capsules.datasets import epoch_order, generative_capsule_experiments
from keras_capsules.datasets.capsnet_experiments import (
    EXPERIMENTS,
    experiment_info,
    load_experiment,
    load_experiment_epochs,
)
from keras_capsules.datasets.heinsen_experiments import (
    load_heinsen_image_epochs,
    load_heinsen_images,
    pad_and_crop,
)
from keras_capsules.datasets.matrix_capsule_experiments import (
    load_matrix_capsule_data,
    load_matrix_capsule_epochs,
)
from keras_capsules.datasets.procedural_shapes import (
    SHAPE_NAMES,
    load_procedural_shapes,
    render_shapes,
)
from keras_capsules.datasets.projection import PrincipalProjection
from keras_capsules.datasets.sst import (
    Vocabulary,
    load_sst,
    parse_tree,
    sst_dataset,
)
from keras_capsules.datasets.tfds_loaders import (
    load_image_arrays,
    load_image_dataset,
)

__all__ = [
    "epoch_order",
    "generative_capsule_experiments",
    "EXPERIMENTS",
    "experiment_info",
    "load_experiment",
    "load_experiment_epochs",
    "load_heinsen_image_epochs",
    "PrincipalProjection",
    "Vocabulary",
    "SHAPE_NAMES",
    "load_image_arrays",
    "load_heinsen_images",
    "load_image_dataset",
    "load_matrix_capsule_data",
    "load_matrix_capsule_epochs",
    "load_procedural_shapes",
    "load_sst",
    "pad_and_crop",
    "parse_tree",
    "render_shapes",
    "sst_dataset",
]
