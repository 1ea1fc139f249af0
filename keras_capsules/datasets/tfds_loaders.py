"""Thin TensorFlow Datasets loaders.

Offline machines point `TFDS_DATA_DIR` at a prepared directory; nothing here
special-cases it.
"""

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds


def load_tfds_image_arrays(name, split, data_dir=None):
    """Loads a TFDS image classification split into memory
    (`datasets.load_image_arrays` reads a prepared-array file first).

    Args:
        name: TFDS name, e.g. `"mnist"`, `"fashion_mnist"`, `"smallnorb"`.
        split: TFDS split string, e.g. `"train[:50000]"`.
        data_dir: optional TFDS data directory (default: `TFDS_DATA_DIR`).

    Returns:
        `(images, labels)`: float32 `(n, H, W, C)` in `[0, 1]`, int64 `(n,)`.

    Examples:

        >>> images, labels = load_tfds_image_arrays("mnist", "test[:8]")
        >>> images.shape, labels.shape, float(images.max()) <= 1.0
        ((8, 28, 28, 1), (8,), True)
    """
    data = tfds.as_numpy(
        tfds.load(
            name,
            split=split,
            batch_size=-1,
            data_dir=data_dir,
            as_supervised=True,
        )
    )
    images, labels = data
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def load_image_dataset(
    name, split, batch_size, flatten=True, projection=None, data_dir=None
):
    """Streams a TFDS image classification split as `(features, labels)`.

    For training that reads its data batch by batch (such as the EM trainer)
    without holding the split in memory.

    Args:
        name: TFDS name, e.g. `"mnist"`.
        split: TFDS split string.
        batch_size: int, examples per batch.
        flatten: bool, whether images become `(batch, H * W * C)` vectors.
        projection: optional `(H * W * C, p)` matrix applied after
            flattening, e.g. `PrincipalProjection(...).components`.
        data_dir: optional TFDS data directory.

    Returns:
        A `tf.data.Dataset` of float32 features in `[0, 1]` (before any
        projection) and int64 labels.

    Examples:

        >>> data = load_image_dataset("mnist", "test[:8]", batch_size=4)
        >>> [tuple(features.shape) for features, _ in data]
        [(4, 784), (4, 784)]
    """
    if projection is not None and not flatten:
        raise ValueError(
            "A projection applies to flattened images: pass flatten=True "
            "with `projection`."
        )
    dataset = tfds.load(
        name, split=split, data_dir=data_dir, as_supervised=True
    ).batch(batch_size)
    matrix = None if projection is None else tf.constant(projection, tf.float32)

    def prepare(images, labels):
        features = tf.cast(images, tf.float32) / 255.0
        if flatten:
            features = tf.reshape(features, (tf.shape(features)[0], -1))
        if matrix is not None:
            features = features @ matrix
        return features, labels

    return dataset.map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
        tf.data.AUTOTUNE
    )
