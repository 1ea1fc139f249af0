"""Datasets of the CapsNet experiments (Sabour, Frosst, Hinton 2017) as
`tf.data` pipelines.

```none
name               image     classes  test splits
mnist              28x28x1   10       test
fashion_mnist      28x28x1   10       test
procedural_shapes  28x28x1   10       test (familiar), test_novel
multi_mnist        36x36x1   10       test (two overlapping digits, sec. 6)
affine_mnist       40x40x1   10       test (translated), test_affine (sec. 5.2)
```

`multi_mnist` overlays pairs of MNIST digits of different classes, each
shifted by up to 4 pixels, with two-hot targets. `affine_mnist` trains on
MNIST digits placed at random on a 40x40 canvas and tests on random affine
maps of the test digits (an affNIST-like set: affNIST itself is not in
TFDS). Both are generated from TFDS MNIST as they stream.
"""

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_capsules.datasets import epoch_order, image_transforms
from keras_capsules.datasets.procedural_shapes import (
    SHAPE_NAMES,
    load_procedural_shapes,
)

EXPERIMENTS = (
    "mnist",
    "fashion_mnist",
    "procedural_shapes",
    "multi_mnist",
    "affine_mnist",
)

# The paper's MultiMNIST: 28x28 digits shifted up to 4 pixels on 36x36.
_MULTI_CANVAS, _MULTI_SHIFT = 36, 4
# Translated MNIST for the affNIST experiment: 40x40 canvas, digits
# anywhere on it (the 28x28 digit's box stays inside).
_AFFINE_CANVAS, _AFFINE_SHIFT = 40, 6


def _tfds_split(name, split, size):
    if size is not None:
        split = f"{split}[:{size}]"
    data = tfds.load(name, split=split, as_supervised=True, batch_size=-1)
    images, labels = tfds.as_numpy(data)
    return images.astype(np.float32) / 255.0, labels.astype(np.int64)


def load_experiment_arrays(name, split, size=None, seed=0):
    """Returns `(images, labels)` arrays of a base dataset's split."""
    if name == "procedural_shapes":
        data = load_procedural_shapes(split, seed=seed)
        return data["image"][:size], data["label"][:size]
    base = "mnist" if name in ("multi_mnist", "affine_mnist") else name
    return _tfds_split(base, split, size)


def experiment_info(name):
    """Returns `(image_shape, num_classes, test_splits)` of an experiment.

    Examples:

        >>> experiment_info("mnist")
        ((28, 28, 1), 10, ('test',))
    """
    if name not in EXPERIMENTS:
        raise ValueError(
            f"Unknown experiment {name!r}. Expected one of {EXPERIMENTS}."
        )
    if name == "multi_mnist":
        return (_MULTI_CANVAS, _MULTI_CANVAS, 1), 10, ("test",)
    if name == "affine_mnist":
        return (_AFFINE_CANVAS, _AFFINE_CANVAS, 1), 10, ("test", "test_affine")
    if name == "procedural_shapes":
        return (28, 28, 1), len(SHAPE_NAMES), ("test", "test_novel")
    return (28, 28, 1), 10, ("test",)


def load_experiment(name, split, batch_size, shift_pixels=0, size=None, seed=0):
    """Returns a `tf.data.Dataset` of `(images, labels)` batches.

    Training batches (`split="train"`) are shuffled and augmented anew every
    epoch; test batches are the same on every call (their transforms come
    from `seed` and the batch index). `load_experiment_epochs` gives
    training batches whose every epoch is a function of its number.

    Args:
        name: one of `EXPERIMENTS`.
        split: `"train"` or one of the experiment's test splits.
        batch_size: int, examples per batch.
        shift_pixels: int, training images of `mnist`, `fashion_mnist` and
            `procedural_shapes` shift by up to this many pixels (the paper:
            2). The other experiments place digits themselves.
        size: optional int, keep only the first examples of the split.
        seed: int, the seed of shuffling and of the test transforms.

    Returns:
        float32 images `(batch, H, W, 1)` in [0, 1] and int64 class ids,
        or float32 two-hot targets `(batch, 10)` for `multi_mnist`.

    Examples:

        >>> data = load_experiment("mnist", "test", batch_size=4, size=8)
        >>> [tuple(images.shape) for images, labels in data]
        [(4, 28, 28, 1), (4, 28, 28, 1)]
    """
    training = split == "train"
    source_split = "test" if split == "test_affine" else split
    images, labels = load_experiment_arrays(name, source_split, size, seed)
    data = tf.data.Dataset.from_tensor_slices((images, labels))
    if training:
        data = data.shuffle(
            len(labels), seed=seed, reshuffle_each_iteration=True
        )
    data = data.batch(batch_size, drop_remainder=False).enumerate()

    def prepare(index, batch):
        # Test sets draw their transforms from a seed fixed per batch.
        batch_seed = (
            None if training else tf.stack([seed, tf.cast(index, tf.int32)])
        )
        return _prepare(name, split, shift_pixels, batch, batch_seed)

    data = data.map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
    return data.prefetch(tf.data.AUTOTUNE)


def load_experiment_epochs(
    name, batch_size, shift_pixels=0, size=None, seed=0, drop_remainder=False
):
    """Returns the training data of an experiment as a function of the
    epoch: `epoch_batches(epoch)` gives the `(images, labels)` batches of
    that epoch, in an order and with transforms drawn from `(seed,
    epoch)` alone (`callbacks.ResumableBackup.fit` takes it). The
    arguments are `load_experiment`'s; `drop_remainder` leaves out a last
    partial batch (`datasets.epoch_order.epoch_batches`).

    Examples:

        >>> epoch_batches = load_experiment_epochs("mnist", batch_size=4,
        ...                                        size=8)
        >>> first = [labels.numpy().tolist() for _, labels in epoch_batches(0)]
        >>> again = [labels.numpy().tolist() for _, labels in epoch_batches(0)]
        >>> first == again  # an epoch is a function of its number
        True
    """
    return epoch_order.prepared_epoch_batches(
        load_experiment_arrays(name, "train", size, seed),
        batch_size,
        seed,
        lambda batch, batch_seed: _prepare(
            name, "train", shift_pixels, batch, batch_seed
        ),
        drop_remainder=drop_remainder,
    )


def _prepare(name, split, shift_pixels, batch, batch_seed):
    """The batch's images and targets as the experiment makes them:
    overlaid, placed on a canvas or shifted, with transforms drawn from
    `batch_seed` (None: anew on every call)."""
    (canvas, _, _), num_classes, _ = experiment_info(name)
    images, labels = batch
    if name == "multi_mnist":
        overlay_seed = (
            tf.random.uniform((2,), 0, 2**30, tf.int32)
            if batch_seed is None
            else batch_seed
        )
        overlays, targets, _, _ = image_transforms.overlay_pairs(
            images, labels, num_classes, canvas, _MULTI_SHIFT, overlay_seed
        )
        return overlays, targets
    if name == "affine_mnist" and split == "test_affine":
        return image_transforms.random_affine(
            images, canvas, seed=batch_seed
        ), labels
    if name == "affine_mnist":
        return image_transforms.random_translate(
            images, canvas, _AFFINE_SHIFT, batch_seed
        ), labels
    if split == "train" and shift_pixels:
        images = image_transforms.random_translate(
            images, canvas, shift_pixels, batch_seed
        )
    return images, labels
