"""Random translations and affine transformations of image batches.

The paper's viewpoint experiments (Sabour et al. 2017, sec. 5.2 and 6): MNIST
digits shifted by up to 2 pixels (training augmentation), placed at random
on a larger canvas (translated MNIST), or transformed by random affine maps
(an affNIST-like test set). Transforms run in `tf.data` pipelines.
"""

import math

import tensorflow as tf


def _apply_transforms(images, transforms, canvas_size, interpolation):
    """Maps output pixel (x, y) to input pixel `transforms` (batch, 8)."""
    return tf.raw_ops.ImageProjectiveTransformV3(
        images=images,
        transforms=transforms,
        output_shape=tf.constant([canvas_size, canvas_size], tf.int32),
        fill_value=0.0,
        interpolation=interpolation,
        fill_mode="CONSTANT",
    )


def random_translate(images, canvas_size, max_shift, seed=None):
    """Places each image on a `canvas_size` square canvas, centred and then
    shifted by a random whole number of pixels in `[-max_shift, max_shift]`
    along each axis (no interpolation).

    Args:
        images: float `(batch, H, W, C)`.
        canvas_size: int, the output's height and width (>= H, W).
        max_shift: int, the largest shift in pixels.
        seed: optional stateless seed, a pair of ints or int tensor `(2,)`;
            None draws new shifts on every call.

    Returns:
        `(batch, canvas_size, canvas_size, C)` images.
    """
    batch = tf.shape(images)[0]
    height, width = images.shape[1], images.shape[2]
    shape = (batch, 2)
    if seed is None:
        shifts = tf.random.uniform(shape, -max_shift, max_shift + 1, tf.int32)
    else:
        shifts = tf.random.stateless_uniform(
            shape, seed, -max_shift, max_shift + 1, tf.int32
        )
    shifts = tf.cast(shifts, tf.float32)
    offset_x = (canvas_size - width) // 2 + shifts[:, 0]
    offset_y = (canvas_size - height) // 2 + shifts[:, 1]
    ones, zeros = tf.ones((batch,)), tf.zeros((batch,))
    transforms = tf.stack(
        [ones, zeros, -offset_x, zeros, ones, -offset_y, zeros, zeros], 1
    )
    return _apply_transforms(images, transforms, canvas_size, "NEAREST")


def rotate(images, degrees, canvas_size):
    """Rotates every image by `degrees` (counter-clockwise as displayed)
    about its centre and centres it on a `canvas_size` square canvas
    (bilinear interpolation): the rotated-MNIST test sets of Smith et al.
    (2020, Table 1).

    Args:
        images: float `(batch, H, W, C)`.
        degrees: float, the angle.
        canvas_size: int, the output's height and width.

    Returns:
        `(batch, canvas_size, canvas_size, C)` images.
    """
    batch = tf.shape(images)[0]
    height, width = images.shape[1], images.shape[2]
    angle = math.radians(degrees)
    cos, sin = math.cos(angle), math.sin(angle)
    # Output pixel (x, y) -> input pixel: rotate back about the centres.
    # Rows grow downwards, so a displayed counter-clockwise turn is a
    # clockwise one in (x, y) pixel coordinates.
    centre_out = (canvas_size - 1) / 2.0
    centre_in_x, centre_in_y = (width - 1) / 2.0, (height - 1) / 2.0
    a0, a1 = cos, -sin
    b0, b1 = sin, cos
    transform = tf.constant(
        [
            a0,
            a1,
            centre_in_x - a0 * centre_out - a1 * centre_out,
            b0,
            b1,
            centre_in_y - b0 * centre_out - b1 * centre_out,
            0.0,
            0.0,
        ],
        tf.float32,
    )
    transforms = tf.tile(transform[None], [batch, 1])
    return _apply_transforms(images, transforms, canvas_size, "BILINEAR")


def random_affine(
    images,
    canvas_size,
    max_rotation_degrees=20.0,
    max_shear=0.2,
    scale_range=(0.8, 1.2),
    max_shift=6.0,
    seed=None,
):
    """Applies a random affine map to each image about its centre and places
    it on a `canvas_size` canvas (bilinear interpolation).

    The map is rotation * shear * scale, then a shift; the default ranges
    are those of the affNIST test set (rotation up to 20 degrees, shear up
    to 0.2, scale 0.8-1.2 per axis, on a 40x40 canvas).

    Args:
        images: float `(batch, H, W, C)`.
        canvas_size: int, the output's height and width.
        max_rotation_degrees, max_shear, scale_range, max_shift: ranges of
            the uniformly drawn parameters.
        seed: optional stateless seed (pair of ints); None draws anew.

    Returns:
        `(batch, canvas_size, canvas_size, C)` images.
    """
    batch = tf.shape(images)[0]
    height, width = images.shape[1], images.shape[2]
    if seed is None:
        uniform = tf.random.uniform((batch, 6))
    else:
        uniform = tf.random.stateless_uniform((batch, 6), seed)
    angle = (2 * uniform[:, 0] - 1) * math.radians(max_rotation_degrees)
    shear = (2 * uniform[:, 1] - 1) * max_shear
    low, high = scale_range
    scale_x = low + (high - low) * uniform[:, 2]
    scale_y = low + (high - low) * uniform[:, 3]
    shift = (2 * uniform[:, 4:6] - 1) * max_shift
    cos, sin = tf.cos(angle), tf.sin(angle)
    # Forward map A = R(angle) [[1, shear], [0, 1]] diag(scale_x, scale_y).
    forward = tf.reshape(
        tf.stack(
            [
                cos * scale_x,
                (cos * shear - sin) * scale_y,
                sin * scale_x,
                (sin * shear + cos) * scale_y,
            ],
            1,
        ),
        (batch, 2, 2),
    )
    inverse = tf.linalg.inv(forward)  # Output pixel -> input pixel.
    centre_out = (canvas_size - 1) / 2.0 + shift  # (b, 2) as (x, y)
    centre_in = tf.constant([(width - 1) / 2.0, (height - 1) / 2.0])
    offset = centre_in - tf.einsum("bxy,by->bx", inverse, centre_out)
    zeros = tf.zeros((batch,))
    transforms = tf.stack(
        [
            inverse[:, 0, 0],
            inverse[:, 0, 1],
            offset[:, 0],
            inverse[:, 1, 0],
            inverse[:, 1, 1],
            offset[:, 1],
            zeros,
            zeros,
        ],
        1,
    )
    return _apply_transforms(images, transforms, canvas_size, "BILINEAR")


def overlay_pairs(images, labels, num_classes, canvas_size, max_shift, seed):
    """MultiMNIST (Sabour et al. sec. 6): each image overlaid with another of
    a different class from the same batch, each shifted independently.

    The partner of example k is the first of a few random rolls of the batch
    whose label differs; examples with no such partner are dropped (rare
    for 10 classes and batches of 32 or more). Pixels combine by maximum.

    Args:
        images: float `(batch, H, W, C)` in [0, 1].
        labels: int `(batch,)` class ids.
        num_classes: int.
        canvas_size: int, the output size (the paper: 36 for 28x28 digits).
        max_shift: int, the largest shift of each digit (the paper: 4).
        seed: stateless seed, a pair of ints or int tensor `(2,)`.

    Returns:
        `(overlays, targets, first, second)`: `(n, S, S, C)` images,
        `(n, num_classes)` two-hot targets, and the two shifted digits
        `(n, S, S, C)` each, for per-digit reconstructions.
    """
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int32)
    batch = tf.shape(labels)[0]
    num_rolls = 4
    rolls = tf.random.stateless_uniform(
        (num_rolls,), seed, 1, tf.maximum(batch, 2), tf.int32
    )
    candidates = tf.stack(
        [tf.roll(tf.range(batch), -rolls[r], 0) for r in range(num_rolls)], 1
    )  # (b, rolls): partner indices.
    differs = tf.not_equal(tf.gather(labels, candidates), labels[:, None])
    first_valid = tf.argmax(tf.cast(differs, tf.int32), axis=1)
    keep = tf.reduce_any(differs, axis=1)
    partner = tf.gather(candidates, first_valid, batch_dims=1)
    first = random_translate(images, canvas_size, max_shift, seed + 1)
    second = tf.gather(
        random_translate(images, canvas_size, max_shift, seed + 2), partner
    )
    targets = tf.one_hot(labels, num_classes) + tf.one_hot(
        tf.gather(labels, partner), num_classes
    )
    overlays = tf.maximum(first, second)
    return tuple(
        tf.boolean_mask(tensor, keep)
        for tensor in (overlays, targets, first, second)
    )
