"""`examples/gpu_session.py`: the pack for a GPU machine without
TensorFlow, and its jobs at `--size=tiny` on JAX on the CPU, stopped at
the budget and continued by the next call as on that machine."""

import json
import os
import unittest
from unittest import mock

import numpy as np

from examples import gpu_session
from keras_capsules.tensorflow_parts import tensorflow_installed
from tests import every_backend
from tests.examples.test_train_every_backend import write_small_mnist


@unittest.skipUnless(
    tensorflow_installed(), "Packing reads MNIST through TFDS."
)
class PackTest(every_backend.TestCase):
    def _download(self, folder, python_version):
        os.makedirs(folder)
        with open(os.path.join(folder, f"keras-cp{python_version}.whl"), "w"):
            pass

    def test_pack_holds_the_wheels_and_the_datasets_as_arrays(self):
        pack_dir = self.create_tempdir().full_path
        with (
            mock.patch.object(gpu_session, "download_wheels", self._download),
            mock.patch.object(gpu_session, "DATASETS", ("mnist",)),
        ):
            size = gpu_session.pack(pack_dir, "3.12")
        self.assertEqual(
            os.listdir(os.path.join(pack_dir, "wheels")), ["keras-cp3.12.whl"]
        )
        with np.load(os.path.join(pack_dir, "data", "mnist.npz")) as arrays:
            self.assertEqual(arrays["train_image"].shape, (60_000, 28, 28, 1))
            self.assertEqual(arrays["test_label"].shape, (10_000,))
        self.assertEqual(size, gpu_session.folder_bytes(pack_dir))

    def test_a_pack_over_the_carry_limit_is_refused(self):
        with (
            mock.patch.object(gpu_session, "download_wheels", self._download),
            mock.patch.object(gpu_session, "DATASETS", ()),
            mock.patch.object(gpu_session, "CARRY_LIMIT_BYTES", 2**20),
            self.assertRaisesRegex(ValueError, "carries at most 1 MiB"),
        ):
            # The repository alone is larger than 1 MiB.
            gpu_session.pack(self.create_tempdir().full_path, "3.12")


@unittest.skipUnless(every_backend.BACKEND == "jax", "The jobs run on JAX.")
class TinyJobsTest(every_backend.TestCase):
    def test_jobs_stop_at_the_budget_and_the_next_call_finishes_them(self):
        pack_dir = self.create_tempdir().full_path
        os.makedirs(os.path.join(pack_dir, "data"))
        write_small_mnist(os.path.join(pack_dir, "data"))
        runs_dir = self.create_tempdir().full_path
        results_dir = self.create_tempdir().full_path

        def call(budget_seconds):
            return gpu_session.train(
                pack_dir, runs_dir, results_dir, "tiny", budget_seconds
            )

        # Killed while it starts: nothing finished, nothing else begun.
        self.assertEqual(
            call(0.5),
            {
                "capsnet_mnist": "stopped",
                "matrix_capsnet_mnist": "not started",
                "routing_bench": "not started",
            },
        )
        self.assertEqual(call(600), dict.fromkeys(gpu_session.JOBS, "done"))
        with open(os.path.join(results_dir, "capsnet_mnist.json")) as file:
            capsnet = json.load(file)
        self.assertEqual(capsnet["train_examples"], 64)
        self.assertLen(capsnet["history"]["loss"], 2)  # both epochs
        with open(os.path.join(results_dir, "routing_bench.jsonl")) as file:
            (bench,) = [json.loads(line) for line in file]
        self.assertEqual(bench["backend"], "jax")
        self.assertGreater(bench["seconds_per_step"], 0)
        with open(os.path.join(results_dir, "device.json")) as file:
            self.assertEqual(json.load(file)[0]["platform"], "cpu")
        # A finished job is not run again.
        self.assertEqual(
            call(600), dict.fromkeys(gpu_session.JOBS, "finished before")
        )


if __name__ == "__main__":
    unittest.main()
