"""`datasets.load_image_arrays` from a prepared-array file, on every
backend; the file written from TensorFlow Datasets equals TFDS's data."""

import importlib.util
import os
import unittest
import unittest.mock

import numpy as np

from keras_capsules import datasets
from tests import every_backend

TFDS_DATA = os.environ.get("TFDS_DATA_DIR")
TENSORFLOW_INSTALLED = importlib.util.find_spec("tensorflow") is not None


def write_array_file(folder, name="mnist", rows=(6, 4)):
    """A prepared-array file of random 3 x 3 images with 3 classes."""
    rng = np.random.default_rng(0)
    arrays = {}
    for split, count in zip(("train", "test"), rows):
        arrays[f"{split}_image"] = rng.integers(
            0, 256, (count, 3, 3, 1), dtype=np.uint8
        )
        arrays[f"{split}_label"] = rng.integers(0, 3, count)
    np.savez_compressed(os.path.join(folder, f"{name}.npz"), **arrays)
    return arrays


class ImageArraysTest(every_backend.TestCase):
    def test_reads_splits_and_slices_as_floats_in_the_unit_interval(self):
        folder = self.create_tempdir().full_path
        arrays = write_array_file(folder)
        images, labels = datasets.load_image_arrays("mnist", "train", folder)
        self.assertEqual(images.dtype, np.float32)
        self.assertEqual(labels.dtype, np.int64)
        self.assertAllEqual(images * 255, arrays["train_image"])
        self.assertAllEqual(labels, arrays["train_label"])
        for split, rows in (
            ("test[:3]", slice(None, 3)),
            ("test[1:]", slice(1, None)),
            ("test[1:-1]", slice(1, -1)),
        ):
            images, labels = datasets.load_image_arrays("mnist", split, folder)
            self.assertAllEqual(images * 255, arrays["test_image"][rows])
            self.assertAllEqual(labels, arrays["test_label"][rows])

    def test_the_data_folder_defaults_to_tfds_data_dir(self):
        folder = self.create_tempdir().full_path
        arrays = write_array_file(folder, "fashion_mnist")
        with unittest.mock.patch.dict(os.environ, {"TFDS_DATA_DIR": folder}):
            _, labels = datasets.load_image_arrays("fashion_mnist", "test")
        self.assertAllEqual(labels, arrays["test_label"])

    def test_bad_splits_are_refused(self):
        folder = self.create_tempdir().full_path
        write_array_file(folder)
        with self.assertRaisesRegex(ValueError, r"no split 'validation'"):
            datasets.load_image_arrays("mnist", "validation", folder)
        with self.assertRaisesRegex(ValueError, r"Received: split='train\+"):
            datasets.load_image_arrays("mnist", "train+test", folder)

    @unittest.skipIf(TENSORFLOW_INSTALLED, "TensorFlow can read TFDS here.")
    def test_without_the_file_or_tensorflow_the_error_names_both(self):
        folder = self.create_tempdir().full_path
        with self.assertRaisesRegex(ImportError, r"pip install.*mnist\.npz"):
            datasets.load_image_arrays("mnist", "test", folder)

    @unittest.skipUnless(
        TENSORFLOW_INSTALLED and TFDS_DATA, "Needs TFDS's prepared MNIST."
    )
    def test_the_saved_file_holds_what_tfds_loads(self):
        folder = self.create_tempdir().full_path
        path = datasets.save_image_arrays("mnist", folder, splits=("test",))
        self.assertEqual(path, os.path.join(folder, "mnist.npz"))
        from keras_capsules.datasets import tfds_loaders  # noqa: PLC0415

        expected = tfds_loaders.load_tfds_image_arrays("mnist", "test[:50]")
        loaded = datasets.load_image_arrays("mnist", "test[:50]", folder)
        self.assertAllEqual(loaded[0], expected[0])
        self.assertAllEqual(loaded[1], expected[1])
