"""Thin TensorFlow Datasets loaders.

Offline machines point `TFDS_DATA_DIR` at a prepared directory; nothing here
special-cases it.
"""

import numpy as np
import tensorflow_datasets as tfds


def load_image_arrays(name, split, data_dir=None):
    """Loads a TFDS image classification split into memory.

    Args:
        name: TFDS name, e.g. `"mnist"`, `"fashion_mnist"`, `"smallnorb"`.
        split: TFDS split string, e.g. `"train[:50000]"`.
        data_dir: optional TFDS data directory (default: `TFDS_DATA_DIR`).

    Returns:
        `(images, labels)`: float32 `(n, H, W, C)` in `[0, 1]`, int64 `(n,)`.
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
