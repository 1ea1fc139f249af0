"""The matrix-capsule example: the novel-viewpoint comparison (in-process),
export and serving in a fresh process."""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

import keras_capsules  # noqa: F401  (registers the saved classes)
from examples import train_matrix_capsules
from tests.examples.test_train_capsnet import (
    run_in_process,
    serve_in_fresh_process,
)


class TrainMatrixCapsulesTest(tf.test.TestCase):
    def test_viewpoint_comparison_trains_exports_and_serves(self):
        directory = tempfile.mkdtemp()
        export_dir = os.path.join(directory, "export")
        results = run_in_process(
            train_matrix_capsules,
            dataset="procedural_shapes",
            viewpoints="rotation",
            cnn_baseline=True,
            baseline_epochs=1,
            model="small",
            train_size=64,
            test_size=32,
            batch_size=16,
            epochs=1,
            preset="standardized:num_iterations=2",
            model_dir=directory,
            export_dir=export_dir,
        )
        for split in ("test", "test_novel"):
            for run in (results, results["cnn"]):
                accuracy = run["evaluation"][split]["accuracy"]
                self.assertBetween(accuracy, 0.0, 1.0)
        self.assertEqual(results["cnn"]["parameters"], 3_274_634)  # at 28x28
        self.assertLessEqual(results["steps"], 4)
        batch = np.random.default_rng(0).uniform(size=(3, 28, 28, 1))
        served = serve_in_fresh_process(
            export_dir, batch.astype(np.float32), directory
        )
        model = keras.models.load_model(
            os.path.join(directory, "matrix_capsnet.keras")
        )
        # In a graph, as the served endpoint runs: an eager call sums in
        # another order, and EM routing's E-step magnifies the float32
        # difference past this tolerance.
        activations = tf.function(lambda x: model(x, training=False))(
            batch.astype(np.float32)
        )
        self.assertAllClose(served["activations"], activations, atol=1e-5)
        self.assertAllEqual(served["class_ids"], np.argmax(activations, -1))
        self.assertEqual(model.get_layer("class_capsules").num_iterations, 2)
        self.assertEqual(
            results["flags"]["preset"], "standardized:num_iterations=2"
        )
        self.assertEqual(
            results["routing"]["cost_normalization"], "standardize"
        )
        self.assertEqual(results["routing"]["num_iterations"], 2)

    def test_a_recipe_override_that_is_not_a_field_is_refused(self):
        with self.assertRaisesRegex(Exception, "overrides fields of"):
            run_in_process(
                train_matrix_capsules,
                dataset="procedural_shapes",
                preset="paper:floor=5e-4",
                model_dir=tempfile.mkdtemp(),
            )

    def test_paper_recipe_with_overrides_trains_in_batch_parts(self):
        directory = tempfile.mkdtemp()
        results = run_in_process(
            train_matrix_capsules,
            dataset="procedural_shapes",
            model="small",
            preset="paper:variance_floor=5e-4,assignment_smoothing=0.5",
            batch_parts=2,
            train_size=33,
            test_size=16,
            batch_size=16,
            epochs=1,
            # What is tested is the recipe's settings and the batch parts;
            # XLA: the viewpoint run here, BatchParts' own tests.
            jit_compile="false",
            model_dir=directory,
        )
        self.assertEqual(results["flags"]["batch_parts"], 2)
        # 33 examples: two batches of 16 and one of 1 (its second slice
        # empty).
        self.assertEqual(results["steps"], 3)
        self.assertBetween(results["evaluation"]["test"]["accuracy"], 0.0, 1.0)
        self.assertEqual(results["routing"]["variance_floor"], 5e-4)
        model = keras.models.load_model(
            os.path.join(directory, "matrix_capsnet.keras")
        )
        self.assertEqual(model.parts, 2)
        self.assertIs(
            model.get_layer("class_capsules"),
            model.model.get_layer("class_capsules"),
        )
        for name in ("conv_caps1", "conv_caps2", "class_capsules"):
            routing = model.get_layer(name).routing
            self.assertEqual(routing.cost_normalization, "none")
            self.assertEqual(routing.variance_floor, 5e-4)
            self.assertEqual(routing.assignment_smoothing, 0.5)
            self.assertEqual(routing.num_iterations, 3)
            self.assertAllClose(
                model.get_layer(name).inverse_temperature_weight,
                [1e-3 / 3, 2e-3 / 3, 1e-3],
            )


if __name__ == "__main__":
    tf.test.main()
