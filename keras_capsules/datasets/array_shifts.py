"""Random whole-pixel shifts of in-memory image batches, in NumPy: the
CapsNet paper's training augmentation (Sabour et al. 2017, sec. 5: shifts
of up to 2 pixels, zero padded) on any Keras backend, where
`image_transforms.random_translate` needs TensorFlow."""

import numpy as np

from keras_capsules.ops.arguments import is_integer


def shift_images(images, max_shift, rng):
    """Shifts each image by a whole number of pixels drawn uniformly from
    `[-max_shift, max_shift]` along each axis; pixels shifted in are zero.

    Args:
        images: `(batch, H, W, C)` array.
        max_shift: int >= 0, the largest shift in pixels.
        rng: a `numpy.random.Generator`, which draws the shifts.

    Returns:
        `(batch, H, W, C)` array of `images`' dtype: image `b` moved
        `shifts[b, 0]` pixels down and `shifts[b, 1]` right.

    Examples:

        >>> image = np.zeros((1, 3, 3, 1))
        >>> image[0, 1, 1, 0] = 1.0
        >>> shifted = shift_images(image, 1, np.random.default_rng(0))
        >>> float(shifted.sum())
        1.0
    """
    if not is_integer(max_shift) or max_shift < 0:
        raise ValueError(
            "`shift_images` expects `max_shift` to be an integer >= 0. "
            f"Received: max_shift={max_shift!r}."
        )
    images = np.asarray(images)
    if images.ndim != 4:
        raise ValueError(
            "`shift_images` expects images `(batch, height, width, "
            f"channels)`. Received shape {images.shape}."
        )
    _, height, width, _ = images.shape
    shifts = rng.integers(-max_shift, max_shift + 1, (len(images), 2))
    m = max_shift
    padded = np.pad(images, ((0, 0), (m, m), (m, m), (0, 0)))
    shifted = np.empty_like(images)
    # One slice of the padded images per distinct shift: at most
    # (2 max_shift + 1)^2 groups.
    for down, right in np.unique(shifts, axis=0):
        rows = np.all(shifts == (down, right), axis=1)
        top, left = m - down, m - right
        shifted[rows] = padded[rows, top : top + height, left : left + width]
    return shifted
