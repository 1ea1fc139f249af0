"""The package imports on every Keras backend, without TensorFlow where
it is not installed, and the parts that need TensorFlow say so."""

import importlib
import importlib.util
import sys

from absl.testing import absltest

from keras_capsules.tensorflow_parts import PARTS
from tests.every_backend import BACKEND, TestCase

# What imports on every backend.
NEUTRAL = (
    "callbacks",
    "datasets",
    "layers",
    "losses",
    "metrics",
    "models",
    "ops",
    "plots",
)


class ImportTest(TestCase):
    def test_the_neutral_parts_import(self):
        for name in NEUTRAL:
            importlib.import_module(f"keras_capsules.{name}")
        if importlib.util.find_spec("tensorflow") is None:
            self.assertNotIn("tensorflow", sys.modules)

    def test_without_tensorflow_its_parts_say_what_to_install(self):
        if importlib.util.find_spec("tensorflow") is not None:
            self.skipTest("TensorFlow is installed here.")
        import keras_capsules

        for name in PARTS:
            if name == "distributions":  # loads at the first name used
                part = importlib.import_module("keras_capsules.distributions")
                with self.assertRaisesRegex(ImportError, "pip install"):
                    part.CapsulePrior  # noqa: B018
                continue
            with self.assertRaisesRegex(ImportError, "pip install"):
                getattr(keras_capsules, name)

    def test_names_that_need_tensorflow_say_so_elsewhere(self):
        from keras_capsules import models

        for part, name in (
            (models, "VariationalAutoencoder"),
            (models, "generative_capsule_autoencoder"),
        ):
            if BACKEND == "tensorflow":
                self.assertTrue(callable(getattr(part, name)))
                continue
            with self.assertRaisesRegex(
                ImportError, "KERAS_BACKEND=tensorflow"
            ):
                getattr(part, name)

    def test_dataset_pipelines_need_tensorflow_installed(self):
        from keras_capsules import datasets

        for name in ("load_sst", "epoch_order", "load_image_dataset"):
            if importlib.util.find_spec("tensorflow") is not None:
                self.assertIsNotNone(getattr(datasets, name))
                continue
            with self.assertRaisesRegex(ImportError, "pip install"):
                getattr(datasets, name)


if __name__ == "__main__":
    absltest.main()
