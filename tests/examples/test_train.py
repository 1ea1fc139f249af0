"""`examples/train.py`, in-process: every routing family on one backbone,
one `results.json` schema, export and resume."""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver, parameterized

from examples import compare_routing, heinsen_training, runs, train
from keras_capsules import models
from tests.examples.script_runs import run_in_process

FLAGS = flags.FLAGS


def run_train(model_dir, **overrides):
    """Runs `train.main` on 64 procedural shapes; returns results.json."""
    settings = {
        "dataset": "procedural_shapes",
        "train_size": 64,
        "test_size": 32,
        "batch_size": 16,
        "primary_types": 2,
        "model_dir": model_dir,
        **overrides,
    }
    return run_in_process(train, **settings)


class TrainTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters(*models.ROUTINGS)
    def test_every_routing_trains_and_writes_one_schema(self, routing):
        model_dir = self.create_tempdir().full_path
        results = run_train(model_dir, routing=routing, epochs=1)
        self.assertEqual(results["script"], "examples.train")
        self.assertEqual(results["flags"]["routing"], routing)
        # The script's default, and a run-level flag given.
        self.assertEqual(results["flags"]["learning_rate"], 1e-3)
        self.assertEqual(results["flags"]["batch_size"], 16)
        self.assertEqual(set(results["evaluation"]), {"test", "test_novel"})
        for scores in results["evaluation"].values():
            self.assertBetween(scores["accuracy"], 0.0, 1.0)
            self.assertTrue(np.isfinite(scores["loss"]))
        self.assertLen(results["seconds_per_epoch"], 1)
        self.assertGreater(results["examples_per_second"], 0)
        model = keras.saving.load_model(
            os.path.join(model_dir, f"capsule_classifier_{routing}.keras")
        )
        self.assertEqual(model.count_params(), results["parameters"])

    def test_script_defaults_apply_unless_given(self):
        results = run_train(self.create_tempdir().full_path)
        self.assertEqual(results["flags"]["epochs"], train.DEFAULTS["epochs"])
        self.assertLen(results["history"]["loss"], train.DEFAULTS["epochs"])

    def test_scripts_in_one_process_do_not_inherit_defaults(self):
        if not FLAGS.is_parsed():
            FLAGS.mark_as_parsed()
        with flagsaver.flagsaver():
            # A script's defaults of flags of `runs` and of a shared
            # module (the Heinsen scripts' mixup) ...
            runs.set_defaults(train_size=50000, epochs=30, mixup_alpha=0.0)
            self.assertEqual(FLAGS.mixup_alpha, 0.0)
            # ... are gone when the next script sets its own.
            runs.set_defaults(**train.DEFAULTS)
            self.assertIsNone(FLAGS.train_size)
            self.assertEqual(FLAGS.epochs, train.DEFAULTS["epochs"])
            self.assertEqual(
                FLAGS.mixup_alpha, heinsen_training.MIXUP_ALPHA.default
            )

    def test_exports_scores_and_probabilities(self):
        directory = self.create_tempdir().full_path
        export_dir = os.path.join(directory, "export")
        run_train(directory, epochs=1, export_dir=export_dir)
        exported = tf.saved_model.load(export_dir)
        served = exported.serve(tf.zeros((3, 28, 28, 1)))
        model = keras.saving.load_model(
            os.path.join(directory, "capsule_classifier_heinsen.keras")
        )
        self.assertAllClose(
            served["scores"], model(np.zeros((3, 28, 28, 1))), atol=1e-5
        )
        self.assertAllClose(
            tf.reduce_sum(served["probabilities"], -1), np.ones(3)
        )


class CompareRoutingTest(tf.test.TestCase):
    def test_tabulates_runs_and_skips_those_done(self):
        root = self.create_tempdir().full_path
        for routing in ("dynamic", "heinsen"):
            run_train(
                os.path.join(root, f"procedural_shapes_{routing}"),
                routing=routing,
                epochs=1,
            )
        with flagsaver.flagsaver(
            model_dir=root,
            datasets=["procedural_shapes"],
            routings=["dynamic", "em", "heinsen"],
            table_only=True,
        ):
            rows = compare_routing.table(
                ["procedural_shapes"], ["dynamic", "em", "heinsen"]
            ).splitlines()
            # Both runs exist: nothing is run again.
            compare_routing.run_one("procedural_shapes", "heinsen")
            ((dataset, routing, results),) = compare_routing.completed_runs(
                ["procedural_shapes"], ["heinsen"]
            )
            line = compare_routing.digest(dataset, routing, results)
        self.assertLen(rows, 4)  # Header, rule, and the two runs.
        self.assertIn("dynamic routing", rows[2])
        self.assertIn("Heinsen routing", rows[3])
        cells = [cell.strip() for cell in rows[3].split("|")[1:-1]]
        self.assertRegex(cells[2], r"^\d+\.\d\d%$")  # Test error.
        self.assertRegex(cells[3], r"^\d+\.\d\d%$")  # Novel viewpoints.
        self.assertEqual(line["routing"], "heinsen")
        self.assertEqual(line["flags"]["epochs"], 1)
        self.assertLen(line["train_accuracy_per_epoch"], 1)
        self.assertIn("test_novel", line["evaluation"])


if __name__ == "__main__":
    tf.test.main()
