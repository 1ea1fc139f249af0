"""`examples/train_capsnet.py` and `examples/train_matrix_capsules.py` on
the backend the suite runs: in-memory data (MNIST from a prepared-array
file, the procedural shapes) where TensorFlow is not the backend, their
`tf.data` pipelines where it is; what needs those pipelines is refused
elsewhere with the backend to use."""

import os
import unittest
from unittest import mock

import keras
import numpy as np
from absl import app

from examples import train_capsnet, train_matrix_capsules
from tests import every_backend
from tests.examples import script_runs
from tests.examples.test_train_every_backend import write_small_mnist

_SMALL = {
    "dataset": "procedural_shapes",
    "train_size": 32,
    "test_size": 15,  # a last partial batch
    "batch_size": 16,
    "epochs": 1,
}
# PyTorch compiles nothing here: `torch.compile` of the EM routing takes
# minutes (the matrix script's default asks every backend to compile).
_COMPILE = {
    "jit_compile": "false" if every_backend.BACKEND == "torch" else "auto"
}


class PaperScriptsTest(every_backend.TestCase):
    def _check_run(self, results, model_dir, model_file, splits):
        self.assertEqual(set(results["evaluation"]), set(splits))
        for scores in results["evaluation"].values():
            self.assertBetween(scores["accuracy"], 0.0, 1.0)
            self.assertTrue(np.isfinite(scores["loss"]))
        model = keras.saving.load_model(os.path.join(model_dir, model_file))
        self.assertEqual(model.count_params(), results["parameters"])

    def test_capsnet_trains_saves_and_reloads(self):
        model_dir = self.create_tempdir().full_path
        results = script_runs.run_in_process(
            train_capsnet,
            **_SMALL,
            **_COMPILE,
            preset="small:decoder_units=32/64",
            figures=False,
            model_dir=model_dir,
        )
        self._check_run(
            results, model_dir, "capsnet.keras", ("test", "test_novel")
        )

    @unittest.skipIf(
        every_backend.BACKEND == "tensorflow", "TensorFlow reads TFDS."
    )
    def test_capsnet_shifts_mnist_from_a_prepared_array_file(self):
        data_dir = self.create_tempdir().full_path
        write_small_mnist(data_dir)
        with mock.patch.dict(os.environ, {"TFDS_DATA_DIR": data_dir}):
            results = script_runs.run_in_process(
                train_capsnet,
                **{**_SMALL, "dataset": "mnist", "train_size": None},
                **_COMPILE,
                preset="small:decoder_units=32/64",
                figures=False,
                model_dir=self.create_tempdir().full_path,
            )
        self.assertEqual(results["train_examples"], 64)
        self.assertEqual(results["flags"]["shift_pixels"], 2)

    def test_matrix_capsules_train_save_and_reload(self):
        model_dir = self.create_tempdir().full_path
        results = script_runs.run_in_process(
            train_matrix_capsules,
            **_SMALL,
            **_COMPILE,
            model="small",
            viewpoints="rotation",
            model_dir=model_dir,
        )
        self._check_run(
            results, model_dir, "matrix_capsnet.keras", ("test", "test_novel")
        )

    @unittest.skipIf(
        every_backend.BACKEND == "tensorflow", "TensorFlow has the pipelines."
    )
    @unittest.skipIf(
        every_backend.BACKEND == "tensorflow", "A ValueError of tf.data's."
    )
    def test_a_viewpoint_split_the_dataset_lacks_is_refused(self):
        with self.assertRaisesRegex(app.UsageError, "no 'rotation' viewpoint"):
            script_runs.run_in_process(
                train_matrix_capsules,
                dataset="mnist",
                viewpoints="rotation",
                model_dir=self.create_tempdir().full_path,
            )

    @unittest.skipIf(
        every_backend.BACKEND == "tensorflow", "TensorFlow has the pipelines."
    )
    def test_what_needs_the_tf_data_pipelines_is_refused(self):
        for script, settings in (
            (train_capsnet, {"dataset": "multi_mnist"}),
            (train_matrix_capsules, {"dataset": "smallnorb"}),
        ):
            with (
                self.subTest(script=script.__name__, **settings),
                self.assertRaisesRegex(
                    app.UsageError, "KERAS_BACKEND=tensorflow"
                ),
            ):
                script_runs.run_in_process(
                    script,
                    **settings,
                    model_dir=self.create_tempdir().full_path,
                )


if __name__ == "__main__":
    unittest.main()
