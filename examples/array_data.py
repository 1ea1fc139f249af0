"""The example scripts' in-memory data, on every Keras backend: MNIST and
Fashion-MNIST from prepared-array files (`datasets.load_image_arrays`)
and the built-in procedural shapes, whose test has familiar and novel
viewpoints. Scripts whose other datasets are `tf.data` pipelines use
these where TensorFlow is not the backend."""

import keras
from absl import app

from keras_capsules import datasets

DATASETS = ("mnist", "fashion_mnist", "procedural_shapes")


def in_memory():
    """True where the scripts' data come as arrays: every backend but
    TensorFlow, whose scripts keep their `tf.data` pipelines."""
    return keras.backend.backend() != "tensorflow"


def check_dataset(name, script):
    """Raises `app.UsageError` unless `name` is one of `DATASETS`, which
    `script` reads in memory on this backend."""
    if name not in DATASETS:
        raise app.UsageError(
            f"`{script}` on the {keras.backend.backend()} backend reads "
            f"{DATASETS} in memory. Received --dataset={name!r}: run it "
            "with KERAS_BACKEND=tensorflow (TensorFlow installed) for that "
            "dataset."
        )


def load_arrays(name, split, size=None):
    """`(images, labels)` float32 in [0, 1] and int64, the first `size`."""
    if name == "procedural_shapes":
        data = datasets.load_procedural_shapes(split, num_examples=size)
        return data["image"], data["label"]
    images, labels = datasets.load_image_arrays(name, split)
    return images[:size], labels[:size]


def test_splits(name):
    """Test splits: novel viewpoints as well for the procedural shapes."""
    return ("test", "test_novel") if name == "procedural_shapes" else ("test",)


def shifted(max_shift):
    """The augmentation of `datasets.array_epoch_batches` that shifts a
    batch's images by up to `max_shift` pixels (None for 0)."""
    if not max_shift:
        return None

    def augment(batch, rng):
        images, *rest = batch
        return (datasets.shift_images(images, max_shift, rng), *rest)

    return augment
