"""`datasets.shift_images`: whole-pixel shifts drawn from a generator,
against a reference that moves each pixel by itself."""

import numpy as np

from keras_capsules import datasets
from tests import every_backend


def shift_reference(image, down, right):
    """`image` (H, W, C) moved `down` rows and `right` columns, pixel by
    pixel; pixels from outside the image are zero."""
    height, width, _ = image.shape
    shifted = np.zeros_like(image)
    for row in range(height):
        for column in range(width):
            source_row, source_column = row - down, column - right
            if 0 <= source_row < height and 0 <= source_column < width:
                shifted[row, column] = image[source_row, source_column]
    return shifted


class ShiftImagesTest(every_backend.TestCase):
    def test_each_image_moves_by_its_drawn_shift(self):
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(200, 7, 6, 2)).astype("float32")
        shifted = datasets.shift_images(images, 2, np.random.default_rng(5))
        # The shifts are the generator's first draw.
        shifts = np.random.default_rng(5).integers(-2, 3, (200, 2))
        # Every one of the 25 shifts, the largest included, occurs.
        self.assertLen(np.unique(shifts, axis=0), 25)
        self.assertEqual(shifted.dtype, images.dtype)
        for image, moved, (down, right) in zip(images, shifted, shifts):
            self.assertAllEqual(moved, shift_reference(image, down, right))

    def test_no_shift_and_shifts_past_the_image(self):
        images = np.arange(2 * 3 * 3).reshape(2, 3, 3, 1)
        unmoved = datasets.shift_images(images, 0, np.random.default_rng(0))
        self.assertAllEqual(unmoved, images)
        # Shifts of up to 5 pixels on 3x3 images: some leave nothing.
        far = datasets.shift_images(images, 5, np.random.default_rng(1))
        shifts = np.random.default_rng(1).integers(-5, 6, (2, 2))
        for image, moved, (down, right) in zip(images, far, shifts):
            self.assertAllEqual(moved, shift_reference(image, down, right))

    def test_bad_arguments_are_refused(self):
        rng = np.random.default_rng(0)
        with self.assertRaisesRegex(ValueError, r"max_shift=-1"):
            datasets.shift_images(np.zeros((1, 2, 2, 1)), -1, rng)
        with self.assertRaisesRegex(ValueError, r"Received shape \(2, 2\)"):
            datasets.shift_images(np.zeros((2, 2)), 1, rng)
