"""`examples/train.py` on the backend the suite runs (every backend, no
TensorFlow needed): each routing family trains on in-memory batches,
MNIST comes from a prepared-array file, and on JAX two devices train
with `keras.distribution.DataParallel` as one does."""

import os
import subprocess
import unittest
import unittest.mock

import keras
import numpy as np
from absl.testing import parameterized

from examples import train
from keras_capsules import models
from tests import every_backend
from tests.examples import script_runs

_SMALL = {
    "dataset": "procedural_shapes",
    "train_size": 64,
    "test_size": 31,  # a last partial batch of an odd size
    "batch_size": 16,
    "primary_types": 2,
    "epochs": 1,
}


def write_small_mnist(folder):
    """A prepared-array file of 64 training and 32 test random digits."""
    rng = np.random.default_rng(0)
    arrays = {}
    for split, count in (("train", 64), ("test", 32)):
        arrays[f"{split}_image"] = rng.integers(
            0, 256, (count, 28, 28, 1), dtype=np.uint8
        )
        arrays[f"{split}_label"] = np.arange(count) % 10
    np.savez_compressed(os.path.join(folder, "mnist.npz"), **arrays)


class TrainOnEveryBackendTest(every_backend.TestCase):
    @parameterized.parameters(*models.ROUTINGS)
    def test_each_routing_trains_saves_and_reloads(self, routing):
        model_dir = self.create_tempdir().full_path
        results = script_runs.run_in_process(
            train, **_SMALL, routing=routing, model_dir=model_dir
        )
        self.assertEqual(results["replicas"], 1)
        self.assertEqual(set(results["evaluation"]), {"test", "test_novel"})
        for scores in results["evaluation"].values():
            self.assertBetween(scores["accuracy"], 0.0, 1.0)
            self.assertTrue(np.isfinite(scores["loss"]))
        model = keras.saving.load_model(
            os.path.join(model_dir, f"capsule_classifier_{routing}.keras")
        )
        self.assertEqual(model.count_params(), results["parameters"])

    def test_mnist_comes_from_a_prepared_array_file(self):
        data_dir = self.create_tempdir().full_path
        write_small_mnist(data_dir)
        with unittest.mock.patch.dict(os.environ, {"TFDS_DATA_DIR": data_dir}):
            results = script_runs.run_in_process(
                train,
                **{**_SMALL, "dataset": "mnist", "train_size": None},
                routing="dynamic",
                model_dir=self.create_tempdir().full_path,
            )
        self.assertEqual(results["train_examples"], 64)
        self.assertEqual(set(results["evaluation"]), {"test"})

    @unittest.skipUnless(every_backend.BACKEND == "torch", "PyTorch's refusal.")
    def test_pytorch_refuses_the_strategies_it_cannot_run(self):
        with self.assertRaisesRegex(ValueError, r"--strategy=mirrored"):
            script_runs.run_in_process(
                train,
                **_SMALL,
                strategy="mirrored",
                model_dir=self.create_tempdir().full_path,
            )


@unittest.skipUnless(every_backend.BACKEND == "jax", "JAX's DataParallel.")
class DataParallelTest(every_backend.TestCase):
    def run_on_two_devices(self, strategy):
        """Trains in a fresh process with two CPU devices; returns the
        results and the trained weights."""
        model_dir = self.create_tempdir().full_path
        flags = [f"--{name}={value}" for name, value in _SMALL.items()]
        command = script_runs.script_command(
            "train",
            [
                *flags,
                "--routing=heinsen",
                "--epochs=2",
                f"--strategy={strategy}",
            ],
            model_dir,
        )
        environment = script_runs.environment(
            KERAS_BACKEND="jax",
            XLA_FLAGS="--xla_force_host_platform_device_count=2",
        )
        subprocess.run(
            command, env=environment, check=True, capture_output=True
        )
        return script_runs.load_run(
            model_dir, "capsule_classifier_heinsen.keras"
        )

    def test_two_devices_train_as_one_does(self):
        results, weights = self.run_on_two_devices("mirrored")
        self.assertEqual(results["replicas"], 2)
        self.assertEqual(set(results["evaluation"]), {"test", "test_novel"})
        one_results, one_weights = self.run_on_two_devices("default")
        self.assertEqual(one_results["replicas"], 1)
        # The same batches, each split in two halves whose gradients are
        # averaged: the same 8 Adam steps up to float32 sums taken in
        # another order. Adam's steps are about the learning rate (1e-3)
        # in every weight whatever the gradient's size, so rounding in a
        # gradient near zero can move a weight by up to that (2.4e-4
        # measured); other batches would move most weights by that.
        for two, one in zip(weights, one_weights):
            self.assertAllClose(two, one, rtol=0, atol=5e-4)
        self.assertAllClose(
            results["evaluation"], one_results["evaluation"], atol=1e-4
        )
