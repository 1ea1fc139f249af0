"""The matrix-capsule example: the novel-viewpoint comparison, export and
serving in a fresh process (subprocesses: the examples share flag names)."""

import json
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

import keras_capsules  # noqa: F401  (registers the saved classes)
from tests.examples.test_train_capsnet import run_python


class TrainMatrixCapsulesTest(tf.test.TestCase):
    def test_viewpoint_comparison_trains_exports_and_serves(self):
        directory = tempfile.mkdtemp()
        export_dir = os.path.join(directory, "export")
        run_python(
            "-m",
            "examples.train_matrix_capsules",
            "--dataset=procedural_shapes",
            "--viewpoints=rotation",
            "--cnn_baseline",
            "--baseline_epochs=1",
            "--model=small",
            "--train_size=64",
            "--test_size=32",
            "--batch_size=16",
            "--epochs=1",
            "--routing_iterations=2",
            f"--model_dir={directory}",
            f"--export_dir={export_dir}",
        )
        with open(os.path.join(directory, "results.json")) as f:
            results = json.load(f)
        for key in ("test_error", "test_novel_error"):
            self.assertBetween(results[key], 0.0, 1.0)
            self.assertBetween(results["cnn"][key], 0.0, 1.0)
        self.assertEqual(results["cnn"]["parameters"], 3_274_634)  # at 28x28
        self.assertLessEqual(results["steps"], 4)
        batch = np.random.default_rng(0).uniform(size=(3, 28, 28, 1))
        batch_path = os.path.join(directory, "batch.npy")
        np.save(batch_path, batch.astype(np.float32))
        served_path = os.path.join(directory, "served.npz")
        run_python(
            code=f"""
            import numpy as np, tensorflow as tf
            served = tf.saved_model.load({export_dir!r})
            outputs = served.serve(tf.constant(np.load({batch_path!r})))
            np.savez({served_path!r},
                     **{{k: v.numpy() for k, v in outputs.items()}})
            """
        )
        served = np.load(served_path)
        model = keras.models.load_model(
            os.path.join(directory, "matrix_capsnet.keras")
        )
        activations = model(batch.astype(np.float32))
        self.assertAllClose(served["activations"], activations, atol=1e-5)
        self.assertAllEqual(served["class_ids"], np.argmax(activations, -1))
        self.assertEqual(model.get_layer("class_capsules").num_iterations, 2)


if __name__ == "__main__":
    tf.test.main()
