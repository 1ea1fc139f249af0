"""Datasets: TFDS loaders, the built-in procedural dataset, projections.

In memory and on every Keras backend: the procedural shapes, the
principal projection, `load_image_arrays` from a prepared-array file
(`save_image_arrays`) and the epochs of in-memory arrays
(`ArrayBatches`, `array_epoch_batches`) with random shifts
(`shift_images`). The TFDS loaders and the papers'
`tf.data` pipelines need TensorFlow installed (with any backend): with
it they import with the package; without it, their first use raises an
ImportError that names what to install.
"""

from keras_capsules.datasets.array_epochs import (
    ArrayBatches,
    array_epoch_batches,
)
from keras_capsules.datasets.array_shifts import shift_images
from keras_capsules.datasets.image_arrays import (
    load_image_arrays,
    save_image_arrays,
)
from keras_capsules.datasets.procedural_shapes import (
    SHAPE_NAMES,
    load_procedural_shapes,
    render_shapes,
)
from keras_capsules.datasets.projection import PrincipalProjection
from keras_capsules.tensorflow_parts import (
    missing_tensorflow_names,
    tensorflow_installed,
)

if tensorflow_installed():
    from keras_capsules.datasets import (
        epoch_order,
        generative_capsule_experiments,
    )
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
    from keras_capsules.datasets.sst import (
        Vocabulary,
        load_sst,
        parse_tree,
        sst_dataset,
    )
    from keras_capsules.datasets.tfds_loaders import load_image_dataset
else:
    __getattr__ = missing_tensorflow_names(
        __name__,
        (
            "epoch_order",
            "generative_capsule_experiments",
            "EXPERIMENTS",
            "experiment_info",
            "load_experiment",
            "load_experiment_epochs",
            "load_heinsen_image_epochs",
            "load_heinsen_images",
            "pad_and_crop",
            "load_matrix_capsule_data",
            "load_matrix_capsule_epochs",
            "Vocabulary",
            "load_sst",
            "parse_tree",
            "sst_dataset",
            "load_image_dataset",
        ),
    )

__all__ = [
    "ArrayBatches",
    "array_epoch_batches",
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
    "save_image_arrays",
    "shift_images",
    "sst_dataset",
]
