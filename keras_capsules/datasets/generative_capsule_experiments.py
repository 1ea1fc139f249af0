"""Data of the generative-capsule experiments (Smith et al., 2020, Table 1).

Unsupervised training images on a square canvas, and the probe test sets:
the test images rotated by fixed angles, and an affNIST-style set of
random affine transformations on a 40x40 canvas (affNIST itself is not in
TFDS; the ranges are affNIST's: rotation up to 20 degrees, shear up to
0.2, scale 0.8-1.2, shifts up to 6 pixels).
"""

import numpy as np
import tensorflow as tf

from keras_capsules.datasets import image_transforms
from keras_capsules.datasets.capsnet_experiments import load_experiment_arrays

DATASETS = ("mnist", "fashion_mnist", "procedural_shapes")
PAPER_ROTATIONS = (0, 45, 90, 135, 180)

# Transforms run on the CPU in chunks of this many images.
_CHUNK = 4096


def _on_canvas(images, canvas_size, transform):
    chunks = [
        transform(tf.constant(images[start : start + _CHUNK]), canvas_size)
        for start in range(0, len(images), _CHUNK)
    ]
    return np.concatenate([chunk.numpy() for chunk in chunks])


def load_images(name, split, size=None, canvas_size=40, seed=0):
    """`(images, labels)`: float32 `(n, canvas, canvas, 1)` in [0, 1],
    centred on the canvas, and int labels; `canvas_size` None keeps the
    original size.

    `procedural_shapes` splits are `train`, `test` (familiar viewpoints)
    and `test_novel`; TFDS datasets use their own split names.
    """
    if name not in DATASETS:
        raise ValueError(
            f"Unknown dataset {name!r}. Expected one of {DATASETS}."
        )
    images, labels = load_experiment_arrays(name, split, size, seed)
    images = np.asarray(images, np.float32)
    if canvas_size is not None:
        images = rotated(images, 0, canvas_size)
    return images, np.asarray(labels)


def rotated(images, degrees, canvas_size):
    """Images rotated by `degrees`, centred on the canvas."""
    return _on_canvas(
        images,
        canvas_size,
        lambda chunk, size: image_transforms.rotate(chunk, degrees, size),
    )


def affine_transformed(images, canvas_size=40, seed=0):
    """affNIST-style random affine transformations (one per image)."""
    return _on_canvas(
        images,
        canvas_size,
        lambda chunk, size: image_transforms.random_affine(
            chunk, size, seed=(seed, len(chunk))
        ),
    )


def probe_test_sets(
    images, labels, canvas_size, rotations=PAPER_ROTATIONS, seed=0
):
    """`{name: (images, labels)}`: `rotated_<angle>` for every angle and
    `affine` (drawn with `seed`), from original images `(n, H, W, 1)`."""
    sets = {
        f"rotated_{angle:g}": (rotated(images, angle, canvas_size), labels)
        for angle in rotations
    }
    sets["affine"] = (affine_transformed(images, canvas_size, seed), labels)
    return sets
