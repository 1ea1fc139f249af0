"""The Heinsen examples: image and SST training, export and serving.

Each run is a subprocess: the examples' flags share names, and serving
must work in a fresh process.
"""

import json
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

import keras_capsules  # noqa: F401  (registers the saved classes)
from examples import heinsen_training
from keras_capsules import recipes
from tests.examples.test_train_capsnet import (
    run_python,
    serve_in_fresh_process,
)

_SST_TREES = [
    "(3 (2 It) (4 (4 works) (2 .)))",
    "(1 (2 A) (1 (0 dull) (2 film)))",
    "(4 (3 (2 Truly) (4 great)) (2 .))",
    "(0 (0 Awful) (2 .))",
    "(2 (2 It) (2 exists))",
]


def write_tiny_treebank(directory):
    for name in ("train.txt", "dev.txt", "test.txt"):
        with open(os.path.join(directory, name), "w") as file:
            file.write("\n".join(_SST_TREES) + "\n")


class TrainHeinsenImageTest(tf.test.TestCase):
    def test_trains_exports_and_serves(self):
        directory = tempfile.mkdtemp()
        export_dir = os.path.join(directory, "export")
        run_python(
            "-m",
            "examples.train_heinsen_image",
            "--dataset=procedural_shapes",
            "--train_size=64",
            "--test_size=32",
            "--batch_size=16",
            "--filters=8",
            "--num_parts=4",
            "--epochs=1",
            "--recipe=cpu",
            f"--model_dir={directory}",
            f"--export_dir={export_dir}",
        )
        with open(os.path.join(directory, "results.json")) as f:
            results = json.load(f)
        self.assertIn("test_novel_accuracy", results)
        # The recipe fills the flags not given; the given ones win.
        flags = results["flags"]
        self.assertEqual(flags["batch_size"], 16)
        self.assertEqual(flags["optimizer"], "adam")
        self.assertEqual(flags["mixup_alpha"], 0.0)
        self.assertEqual(flags["padding"], "same")
        self.assertEqual(flags["initialization"], "author")
        self.assertLen(results["history"]["loss"], 1)
        batch = np.random.default_rng(0).uniform(size=(3, 28, 28, 1))
        served = serve_in_fresh_process(
            export_dir, batch.astype(np.float32), directory
        )
        model = keras.models.load_model(
            os.path.join(directory, "heinsen_image.keras")
        )
        scores = model(batch.astype(np.float32))
        self.assertAllClose(served["scores"], scores, atol=1e-5)
        self.assertAllClose(served["probabilities"].sum(-1), np.ones(3))


class CompileClassifierTest(tf.test.TestCase):
    def test_optimizers_and_beta_1_schedules(self):
        def compiled(**options):
            model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
            heinsen_training.compile_classifier(
                model, 100, 5e-4, False, **options
            )
            return model.optimizer

        author = compiled()
        self.assertIsInstance(author, recipes.RAdam)
        self.assertAllClose(float(author.beta_1(10)), 0.81)
        paper_text = compiled(beta_1_schedule="paper_text")
        self.assertAllClose(float(paper_text.beta_1(0)), 0.999)
        adam = compiled(optimizer="adam")
        self.assertIsInstance(adam, keras.optimizers.Adam)
        self.assertAllClose(float(adam.learning_rate), 1e-5)
        with self.assertRaisesRegex(ValueError, "optimizer.*'sgd'"):
            compiled(optimizer="sgd")


class TrainHeinsenSstTest(tf.test.TestCase):
    def test_trains_on_phrases_and_serves_token_ids(self):
        directory = tempfile.mkdtemp()
        write_tiny_treebank(directory)
        export_dir = os.path.join(directory, "export")
        run_python(
            "-m",
            "examples.train_heinsen_sst",
            "--task=sst2",
            f"--data_dir={directory}",
            "--embedding_dim=8",
            "--batch_size=4",
            "--epochs=2",
            f"--model_dir={os.path.join(directory, 'run')}",
            f"--export_dir={export_dir}",
        )
        with open(os.path.join(directory, "run", "results.json")) as f:
            results = json.load(f)
        # SST-2 phrases of the tiny treebank without neutral ones (2).
        self.assertEqual(results["train_examples"], 11)
        self.assertIn("validation_accuracy", results)
        tokens = np.array([[2, 3, 0], [4, 0, 0]], np.int32)
        served = serve_in_fresh_process(export_dir, tokens, directory)
        model = keras.models.load_model(
            os.path.join(directory, "run", "heinsen_sst.keras")
        )
        self.assertAllClose(served["scores"], model(tokens), atol=1e-5)


if __name__ == "__main__":
    tf.test.main()
