"""Image classification splits in memory on any Keras backend: from a
prepared-array file (`save_image_arrays`) where the data folder has
one, otherwise through TensorFlow Datasets.

A prepared-array file, `<data_dir>/<name>.npz`, holds each split of one
dataset as uint8 images and int64 labels (`<split>_image`,
`<split>_label`). It lets an environment without TensorFlow (Keras on
JAX or PyTorch, a machine without network) train on MNIST or
Fashion-MNIST: write it once where TensorFlow Datasets is installed.
"""

import os
import re

import numpy as np

from keras_capsules.tensorflow_parts import require_tensorflow

# `train`, `test[:500]`, `train[1000:]`: a split, optionally sliced.
_SPLIT = re.compile(r"^(\w+)(?:\[(-?\d*):(-?\d*)\])?$")


def array_file(name, data_dir=None):
    """The prepared-array file of dataset `name` in `data_dir` (default:
    `TFDS_DATA_DIR`), whether it exists or not; None without a folder."""
    data_dir = data_dir or os.environ.get("TFDS_DATA_DIR")
    return os.path.join(data_dir, f"{name}.npz") if data_dir else None


def load_image_arrays(name, split, data_dir=None):
    """Loads an image classification split into memory.

    Reads `<data_dir>/<name>.npz` where it exists (`save_image_arrays`
    writes it; any Keras backend, no TensorFlow needed), otherwise the
    TensorFlow Datasets data (TensorFlow needed).

    Args:
        name: the dataset's TFDS name, e.g. `"mnist"`, `"fashion_mnist"`,
            `"smallnorb"`.
        split: a split, optionally sliced: `"train"`, `"test[:500]"`,
            `"train[50000:]"`.
        data_dir: optional data folder (default: `TFDS_DATA_DIR`).

    Returns:
        `(images, labels)`: float32 `(n, H, W, C)` in `[0, 1]`, int64 `(n,)`.

    Examples:

        >>> images, labels = load_image_arrays("mnist", "test[:8]")
        >>> images.shape, labels.shape, float(images.max()) <= 1.0
        ((8, 28, 28, 1), (8,), True)
    """
    path = array_file(name, data_dir)
    if path is None or not os.path.exists(path):
        return _load_through_tfds(name, split, data_dir, path)
    base, rows = _parse_split(split)
    with np.load(path) as arrays:
        if f"{base}_image" not in arrays:
            splits = [key[:-6] for key in arrays if key.endswith("_image")]
            raise ValueError(
                f"{path} has no split {base!r}. Expected one of "
                f"{sorted(splits)}."
            )
        images = arrays[f"{base}_image"][rows]
        labels = arrays[f"{base}_label"][rows]
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def save_image_arrays(name, data_dir, splits=("train", "test"), tfds_dir=None):
    """Writes the prepared-array file of dataset `name` to `data_dir` from
    its TensorFlow Datasets data; returns the file's path.

    Args:
        name: the dataset's TFDS name, e.g. `"mnist"`.
        data_dir: the folder of the file (`<data_dir>/<name>.npz`).
        splits: the splits to write.
        tfds_dir: optional TFDS data folder to read (default:
            `TFDS_DATA_DIR`). Needs TensorFlow Datasets and the data.

    Examples:

        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> path = save_image_arrays("mnist", folder, splits=("test",))
        >>> images, labels = load_image_arrays("mnist", "test[:8]", folder)
        >>> images.shape, labels.shape
        ((8, 28, 28, 1), (8,))
    """
    path = os.path.join(data_dir, f"{name}.npz")
    arrays = {}
    for split in splits:
        images, labels = _load_through_tfds(name, split, tfds_dir, None)
        arrays[f"{split}_image"] = np.round(images * 255).astype(np.uint8)
        arrays[f"{split}_label"] = labels
    os.makedirs(data_dir, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def _parse_split(split):
    """`(split name, slice of its rows)` of a split string."""
    match = _SPLIT.match(split)
    if match is None:
        raise ValueError(
            "A prepared-array file reads a split or a slice of one. "
            f"Received: split={split!r}. Expected e.g. 'train', "
            "'test[:500]' or 'train[50000:]'."
        )
    base, start, stop = match.groups()
    start, stop = (int(end) if end else None for end in (start, stop))
    return base, slice(start, stop)


def _load_through_tfds(name, split, data_dir, missing_file):
    """TFDS's split in memory; where TensorFlow is missing, an ImportError
    that also names the prepared-array file."""
    try:
        require_tensorflow("load_image_arrays (through TensorFlow Datasets)")
    except ImportError as error:
        raise ImportError(
            f"{error} Or put a prepared-array file at "
            f"{missing_file or f'<TFDS_DATA_DIR>/{name}.npz'} "
            "(`datasets.save_image_arrays`, where TensorFlow is installed)."
        ) from None
    from keras_capsules.datasets import tfds_loaders  # noqa: PLC0415

    return tfds_loaders.load_tfds_image_arrays(name, split, data_dir)
