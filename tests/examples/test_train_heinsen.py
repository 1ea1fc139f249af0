"""The Heinsen examples: image and SST training (in-process), export
and serving (in a fresh process: serving must not need this one)."""

import os
import subprocess
import tempfile

import keras
import numpy as np
import tensorflow as tf
from absl import flags as absl_flags
from absl.testing import flagsaver

import keras_capsules  # noqa: F401  (registers the saved classes)
from examples import heinsen_training, train_heinsen_image
from keras_capsules import recipes
from tests.examples.script_runs import (
    ROOT,
    environment,
    load_run,
    script_command,
)
from tests.examples.test_train_capsnet import (
    run_in_process,
    serve_in_fresh_process,
)

FLAGS = absl_flags.FLAGS
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
        results = run_in_process(
            train_heinsen_image,
            dataset="procedural_shapes",
            train_size=64,
            test_size=32,
            batch_size=16,
            filters=8,
            num_parts=4,
            epochs=1,
            preset="cpu",
            model_dir=directory,
            export_dir=export_dir,
        )
        self.assertIn("test_novel", results["evaluation"])
        # The preset fills the flags not given; the given ones win.
        flags = results["flags"]
        self.assertEqual(flags["batch_size"], 16)
        self.assertEqual(flags["epochs"], 1)
        self.assertEqual(flags["optimizer"], "adam")
        self.assertEqual(flags["learning_rate"], 1e-3)
        self.assertEqual(flags["mixup_alpha"], 0.0)
        self.assertEqual(flags["initialization"], "author")
        self.assertEqual(flags["routing_epsilon"], 1e-5)
        self.assertEqual(results["padding"], "same")
        self.assertLen(results["history"]["val_accuracy"], 1)
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

    def test_paper_recipe_is_the_default(self):
        # The flags the script trains with when none is given: its run
        # set-up alone (the run above trains with a preset given).
        if not FLAGS.is_parsed():
            FLAGS.mark_as_parsed()
        with flagsaver.flagsaver(model_dir=tempfile.mkdtemp()):
            train_heinsen_image.set_up_run()
            self.assertEqual(FLAGS.preset, "paper")
            self.assertEqual(FLAGS.optimizer, "radam")
            self.assertEqual(FLAGS.learning_rate, 5e-4)
            self.assertEqual(FLAGS.mixup_alpha, 0.2)
            self.assertEqual(FLAGS.batch_size, 20)
            self.assertEqual(FLAGS.epochs, 50)


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
        # In a process of its own, as a user runs it: a crash there shows
        # its message here (a CI run once lost a test worker in this test
        # with no message to read).
        model_dir = os.path.join(directory, "run")
        result = subprocess.run(
            script_command(
                "train_heinsen_sst",
                [
                    "--task=sst2",
                    f"--data_dir={directory}",
                    "--embedding_dim=8",
                    "--batch_size=4",
                    "--epochs=2",
                    f"--export_dir={export_dir}",
                ],
                model_dir,
            ),
            cwd=ROOT,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        results, _ = load_run(model_dir)
        # SST-2 phrases of the tiny treebank without neutral ones (2).
        self.assertEqual(results["train_examples"], 11)
        self.assertIn("validation", results["evaluation"])
        self.assertEqual(results["flags"]["learning_rate"], 5e-4)
        tokens = np.array([[2, 3, 0], [4, 0, 0]], np.int32)
        served = serve_in_fresh_process(export_dir, tokens, directory)
        model = keras.models.load_model(
            os.path.join(directory, "run", "heinsen_sst.keras")
        )
        self.assertAllClose(served["scores"], model(tokens), atol=1e-5)


if __name__ == "__main__":
    tf.test.main()
