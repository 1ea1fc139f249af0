"""Datasets of the matrix-capsule experiments (Hinton, Sabour, Frosst 2018,
sec. 5) as `tf.data` pipelines of `(images, class ids)`.

```none
name               image        classes  training / test preparation
smallnorb          32x32x1      5        48x48, per-image standardisation,
                                         random 32x32 crop + brightness and
                                         contrast / centre crop
mnist              28x28x1      10       none
fashion_mnist      28x28x1      10       none
procedural_shapes  28x28x1      10       none
```

Viewpoint splits (sec. 5.1) train on familiar viewpoints only and test on
familiar (`test`) and novel (`test_novel`) ones: `smallnorb` by azimuth
(train on 300-40 degrees, novel 60-280) or by elevation (train on the 3
lowest, novel the 6 highest); `procedural_shapes` by rotation (train on
|angle| <= 30 degrees, novel beyond). smallNORB comes from TFDS; it must be
prepared in `TFDS_DATA_DIR` on machines without downloads.
"""

import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_capsules.datasets import epoch_order
from keras_capsules.datasets.capsnet_experiments import load_experiment_arrays
from keras_capsules.datasets.matrix_capsule_names import (
    CROP,
    SMALLNORB_SIZE,
    check_names,
)

# smallNORB azimuth ids are multiples of 20 degrees: 300-40 degrees.
_FAMILIAR_AZIMUTHS = (15, 16, 17, 0, 1, 2)
_FAMILIAR_ELEVATIONS = (0, 1, 2)
_SMALLNORB_SIZE, _CROP = SMALLNORB_SIZE, CROP
# Random brightness and contrast of training crops (the paper gives no
# ranges; these are moderate for standardised images).
_MAX_BRIGHTNESS, _CONTRAST_RANGE = 0.2, (0.8, 1.2)


def standardize_smallnorb(features):
    """A TFDS smallNORB record to `(48x48x1 image with zero mean and unit
    variance, category)`; the first image of the stereo pair."""
    image = tf.image.resize(
        tf.cast(features["image"], tf.float32),
        (_SMALLNORB_SIZE, _SMALLNORB_SIZE),
        antialias=True,
    )
    return tf.image.per_image_standardization(image), features["label_category"]


def random_crop_and_jitter(image, label, seed=None):
    """Training preparation: a random 32x32 crop, random brightness and
    contrast, drawn from the stateless `seed` `(2,)` (None: a new seed on
    every call)."""
    if seed is None:
        seed = tf.random.uniform((2,), 0, 2**30, tf.int32)
    crop_seed, brightness_seed, contrast_seed = (
        tf.random.experimental.stateless_fold_in(seed, k) for k in range(3)
    )
    image = tf.image.stateless_random_crop(image, (_CROP, _CROP, 1), crop_seed)
    image = tf.image.stateless_random_brightness(
        image, _MAX_BRIGHTNESS, brightness_seed
    )
    image = tf.image.stateless_random_contrast(
        image, *_CONTRAST_RANGE, contrast_seed
    )
    return image, label


def random_crops_and_jitter(images, labels, seed):
    """`random_crop_and_jitter` of every image of a batch, each with its
    own seed drawn from the batch's `seed` `(2,)`."""
    seeds = tf.random.stateless_uniform(
        (tf.shape(images)[0], 2), seed, 0, 2**30, tf.int32
    )
    crops = tf.map_fn(
        lambda args: random_crop_and_jitter(args[0], None, args[1])[0],
        (images, seeds),
        fn_output_signature=tf.TensorSpec((_CROP, _CROP, 1), images.dtype),
    )
    return crops, labels


def centre_crop(image, label):
    """Test preparation: the central 32x32 crop."""
    offset = (_SMALLNORB_SIZE - _CROP) // 2
    return image[offset : offset + _CROP, offset : offset + _CROP], label


def test_crops(images, stride=8):
    """Multi-crop testing: every 32x32 crop of `(batch, 48, 48, 1)` images
    on a grid of `stride` pixels, `(crops, batch, 32, 32, 1)`; average the
    class activations over the first axis."""
    starts = range(0, _SMALLNORB_SIZE - _CROP + 1, stride)
    return tf.stack(
        [
            images[:, y : y + _CROP, x : x + _CROP]
            for y in starts
            for x in starts
        ]
    )


def _viewpoint_filter(viewpoints, split, familiar):
    key, allowed = {
        "azimuth": ("label_azimuth", _FAMILIAR_AZIMUTHS),
        "elevation": ("label_elevation", _FAMILIAR_ELEVATIONS),
    }[viewpoints]

    def keep(features):
        is_familiar = tf.reduce_any(
            tf.equal(features[key], tf.constant(allowed, tf.int64))
        )
        return is_familiar if familiar else tf.logical_not(is_familiar)

    return keep


def _smallnorb(split, viewpoints, size):
    base = "train" if split == "train" else "test"
    data = tfds.load("smallnorb", split=base)
    if viewpoints != "none":
        data = data.filter(
            _viewpoint_filter(viewpoints, split, split != "test_novel")
        )
    if size is not None:
        data = data.take(size)
    return data.map(standardize_smallnorb, tf.data.AUTOTUNE)


def load_matrix_capsule_data(
    name,
    split,
    batch_size,
    viewpoints="none",
    size=None,
    seed=0,
    full_images=False,
):
    """Returns a `tf.data.Dataset` of `(images, class ids)` batches.
    Training batches (`split="train"`) are shuffled and augmented anew on
    every pass; `load_matrix_capsule_epochs` gives training batches whose
    every epoch is a function of its number.

    Args:
        name: one of `matrix_capsule_names.DATASETS`.
        split: `"train"`, `"test"`, or with a viewpoint split (and for
            `procedural_shapes`) `"test_novel"`.
        batch_size: int.
        viewpoints: one of `matrix_capsule_names.VIEWPOINT_SPLITS`:
            `"azimuth"`, `"elevation"` (smallNORB) or `"rotation"`
            (procedural shapes; its splits are always by rotation).
        size: optional int, keep only the first examples.
        seed: int, shuffling and augmentation seed.
        full_images: bool, smallNORB test images at 48x48 (for
            `test_crops`) instead of their centre crop.

    Examples:

        >>> data = load_matrix_capsule_data(
        ...     "procedural_shapes", "test_novel", 4, viewpoints="rotation",
        ...     size=8)
        >>> [tuple(images.shape) for images, _ in data]
        [(4, 28, 28, 1), (4, 28, 28, 1)]
    """
    check_names(name, viewpoints)
    training = split == "train"
    if name == "smallnorb":
        data = _smallnorb(split, viewpoints, size)
        if training:
            data = data.shuffle(25_000, seed=seed).map(
                random_crop_and_jitter, tf.data.AUTOTUNE
            )
        elif not full_images:
            data = data.map(centre_crop, tf.data.AUTOTUNE)
    else:
        images, labels = load_experiment_arrays(name, split, size, seed)
        data = tf.data.Dataset.from_tensor_slices((images, labels))
        if training:
            data = data.shuffle(60_000, seed=seed)
    return data.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def _training_arrays(name, viewpoints, size, seed):
    """`(images, class ids)` of the training split (smallNORB's
    standardised 48x48 images)."""
    if name != "smallnorb":
        return load_experiment_arrays(name, "train", size, seed)
    images, labels = [], []
    for image_batch, label_batch in tfds.as_numpy(
        _smallnorb("train", viewpoints, size).batch(4096)
    ):
        images.append(image_batch)
        labels.append(label_batch)
    return np.concatenate(images), np.concatenate(labels)


def load_matrix_capsule_epochs(
    name, batch_size, viewpoints="none", size=None, seed=0, drop_remainder=False
):
    """Returns the training data as a function of the epoch:
    `epoch_batches(epoch)` gives that epoch's `(images, class ids)`
    batches in an order, and with smallNORB crops and jitter, drawn from
    `(seed, epoch)` alone (`callbacks.ResumableBackup.fit` takes it). The
    arguments are `load_matrix_capsule_data`'s, and `drop_remainder`
    leaves out a last partial batch; the training images are held in
    memory (smallNORB's 24,300 at 48x48: 224 MB).

    Examples:

        >>> epoch_batches = load_matrix_capsule_epochs(
        ...     "procedural_shapes", 4, viewpoints="rotation", size=8)
        >>> len(list(epoch_batches(0)))
        2
    """
    check_names(name, viewpoints)
    shuffled = epoch_order.epoch_batches(
        _training_arrays(name, viewpoints, size, seed),
        batch_size,
        seed,
        drop_remainder,
    )

    def epoch_batches(epoch):
        def prepare(index, batch):
            if name != "smallnorb":
                return batch
            batch_seed = epoch_order.batch_seed(seed, epoch, index)
            return random_crops_and_jitter(*batch, batch_seed)

        data = shuffled(epoch).map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
        return data.prefetch(tf.data.AUTOTUNE)

    return epoch_batches
