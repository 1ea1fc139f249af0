"""Image datasets of Heinsen's (2019) experiments as `tf.data` pipelines,
with one-hot labels (mixup mixes them).

```none
name               image       classes  training augmentation
smallnorb          96x96x2     5        16 px padding, random 96x96 crop
mnist              28x28x1     10       none (pad_pixels to add some)
fashion_mnist      28x28x1     10       none
procedural_shapes  28x28x1     10       none
```

smallNORB's stereo pair becomes the two channels of one image. smallNORB
comes from TFDS (`tfds.load("smallnorb")`); it must be prepared in
`TFDS_DATA_DIR` on machines without downloads.
"""

import tensorflow as tf
import tensorflow_datasets as tfds

from keras_capsules.datasets import epoch_order
from keras_capsules.datasets.capsnet_experiments import load_experiment_arrays
from keras_capsules.datasets.procedural_shapes import SHAPE_NAMES

DATASETS = ("smallnorb", "mnist", "fashion_mnist", "procedural_shapes")
# The paper pads each smallNORB pair by 16 px and crops 96x96 at random.
_SMALLNORB_PAD = 16


def dataset_info(name):
    """Returns `(image_shape, num_classes, test_splits, pad_pixels)`."""
    if name not in DATASETS:
        raise ValueError(
            f"Unknown dataset {name!r}. Expected one of {DATASETS}."
        )
    if name == "smallnorb":
        return (96, 96, 2), 5, ("test",), _SMALLNORB_PAD
    if name == "procedural_shapes":
        return (28, 28, 1), len(SHAPE_NAMES), ("test", "test_novel"), 0
    return (28, 28, 1), 10, ("test",), 0


def smallnorb_example(features):
    """A TFDS smallNORB record to `(stereo image (96, 96, 2) in [0, 1],
    category)`."""
    image = tf.concat([features["image"], features["image2"]], axis=-1)
    return tf.cast(image, tf.float32) / 255.0, features["label_category"]


def pad_and_crop(images, pad_pixels, seed=None):
    """Pads a batch of images by `pad_pixels` on every side with zeros and
    crops each back to its size at a random place.

    Examples:

        >>> images = np.ones((2, 8, 8, 1), "float32")
        >>> tuple(pad_and_crop(images, 2, seed=(0, 1)).shape)
        (2, 8, 8, 1)
    """
    shape = tf.shape(images)
    padded = tf.pad(
        images,
        [[0, 0], [pad_pixels, pad_pixels], [pad_pixels, pad_pixels], [0, 0]],
    )
    offsets = (
        tf.random.stateless_uniform(
            (shape[0], 2), seed, 0, 2 * pad_pixels + 1, tf.int32
        )
        if seed is not None
        else tf.random.uniform((shape[0], 2), 0, 2 * pad_pixels + 1, tf.int32)
    )
    rows = offsets[:, :1] + tf.range(shape[1])[None]  # (b, H)
    columns = offsets[:, 1:] + tf.range(shape[2])[None]  # (b, W)
    cropped = tf.gather(padded, rows, axis=1, batch_dims=1)
    return tf.gather(cropped, columns, axis=2, batch_dims=1)


def _smallnorb(split, size):
    if size is not None:
        split = f"{split}[:{size}]"
    data = tfds.load("smallnorb", split=split)
    return data.map(smallnorb_example, num_parallel_calls=tf.data.AUTOTUNE)


def load_heinsen_images(
    name,
    split,
    batch_size,
    size=None,
    seed=0,
    pad_pixels=None,
    drop_remainder=False,
):
    """Returns a `tf.data.Dataset` of `(images, one-hot labels)` batches.

    Args:
        name: one of `DATASETS`.
        split: `"train"` or one of the dataset's test splits.
        batch_size: int.
        size: optional int, keep only the first examples of the split.
        seed: int, seed of the shuffling.
        pad_pixels: int, pad-and-crop of training images; None for the
            dataset's default (16 for smallNORB, 0 otherwise).
        drop_remainder: bool, leave out a last partial batch.

    Examples:

        >>> data = load_heinsen_images("mnist", "test", batch_size=4, size=8)
        >>> [tuple(labels.shape) for _, labels in data]  # one-hot
        [(4, 10), (4, 10)]
    """
    _, num_classes, _, default_pad = dataset_info(name)
    pad_pixels = default_pad if pad_pixels is None else pad_pixels
    training = split == "train"
    if name == "smallnorb":
        data = _smallnorb(split, size)
    else:
        images, labels = load_experiment_arrays(name, split, size, seed)
        data = tf.data.Dataset.from_tensor_slices((images, labels))
    if training:
        data = data.shuffle(
            size or 50_000, seed=seed, reshuffle_each_iteration=True
        )
    data = data.batch(batch_size, drop_remainder)

    def prepare(images, labels):
        if training and pad_pixels:
            images = pad_and_crop(images, pad_pixels)
        return images, tf.one_hot(labels, num_classes)

    data = data.map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
    return data.prefetch(tf.data.AUTOTUNE)


def load_heinsen_image_epochs(
    name, batch_size, size=None, seed=0, pad_pixels=None, drop_remainder=False
):
    """Returns the training data as a function of the epoch:
    `epoch_batches(epoch)` gives the `(images, one-hot labels)` batches of
    that epoch, in an order and with crops drawn from `(seed, epoch)`
    alone (`callbacks.ResumableBackup.fit` takes it). smallNORB, read from
    TFDS record by record, keeps `load_heinsen_images`' shuffle, whose
    order a restarted run does not repeat. The arguments are
    `load_heinsen_images`'.

    Examples:

        >>> epoch_batches = load_heinsen_image_epochs("mnist", batch_size=4,
        ...                                           size=8)
        >>> len(list(epoch_batches(0)))
        2
    """
    if name == "smallnorb":
        data = load_heinsen_images(
            name, "train", batch_size, size, seed, pad_pixels, drop_remainder
        )
        return lambda epoch: data
    _, num_classes, _, default_pad = dataset_info(name)
    pad_pixels = default_pad if pad_pixels is None else pad_pixels

    def prepare(batch, batch_seed):
        images, labels = batch
        if pad_pixels:
            images = pad_and_crop(images, pad_pixels, batch_seed)
        return images, tf.one_hot(labels, num_classes)

    return epoch_order.prepared_epoch_batches(
        load_experiment_arrays(name, "train", size, seed),
        batch_size,
        seed,
        prepare,
        drop_remainder=drop_remainder,
    )
