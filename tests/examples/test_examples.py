"""Smoke tests of the example scripts on small procedural data."""

import json
import os
import subprocess
import sys
import tempfile

import tensorflow as tf
from absl import app
from absl import flags as absl_flags
from absl.testing import flagsaver

from examples import capsule_regression, demo, distribution, results_table
from tests.examples.script_runs import run_in_process

FLAGS = absl_flags.FLAGS


def run_demo(**settings):
    """Runs the demo in this process with the flags `settings`; returns
    its results."""
    if not FLAGS.is_parsed():
        FLAGS.mark_as_parsed()
    with flagsaver.flagsaver(**settings):
        demo.main(["prog"])
    with open(os.path.join(settings["model_dir"], "results.json")) as f:
        return json.load(f)


class ExamplesTest(tf.test.TestCase):
    def test_capsule_regression_em_writes_results_and_figures(self):
        directory = tempfile.mkdtemp()
        results = run_in_process(
            capsule_regression,
            dataset="procedural_shapes",
            capsule_dim=2,
            train_size=600,
            projection_dim=32,
            max_iterations=6,
            model_dir=directory,
        )
        self.assertGreater(results["evaluation"]["test"]["accuracy"], 0.5)
        self.assertIn("test_novel", results["evaluation"])
        self.assertLen(results["history"]["error"], 6)
        self.assertEqual(results["flags"]["architecture"], "multiclass")
        self.assertEqual(results["train_examples"], 600)
        for name in ("latent_space.png", "prototypes.png", "em_state.npz"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)))

    def test_capsule_regression_sgd_saves_model(self):
        directory = tempfile.mkdtemp()
        results = run_in_process(
            capsule_regression,
            dataset="procedural_shapes",
            strategy="mirrored",
            training="sgd",
            capsule_dim=2,
            train_size=600,
            projection_dim=32,
            epochs=2,
            figures=False,
            model_dir=directory,
        )
        self.assertLen(results["history"]["val_accuracy"], 2)
        self.assertCountEqual(
            results["evaluation"], ["train", "validation", "test", "test_novel"]
        )
        path = os.path.join(directory, "capsule_regression.keras")
        self.assertTrue(os.path.exists(path))

    def test_demo_runs_small(self):
        directory = tempfile.mkdtemp()
        results = run_demo(
            model_dir=directory,
            preset="default:train_size=300,em_iterations=3,sgd_epochs=1,"
            "capsnet_epochs=1,heinsen_epochs=1,matrix_train_size=64,"
            "generative_train_size=64,generative_epochs=1",
            test_size=200,
            # Each model's XLA compilation is tested with the model; this
            # is the demo's flow, rows and figures.
            jit_compile="false",
            batch_parts=2,
        )
        # The matrix row trained in batch parts, its figure drawn from the
        # model inside.
        self.assertEqual(results["flags"]["batch_parts"], 2)
        rows = results["rows"]
        self.assertLen(rows, 9)
        self.assertEqual(rows[-2]["model"], "matrix capsules, EM routing")
        self.assertEqual(rows[-1]["model"], "generative capsules (probe)")
        self.assertEqual(rows[0]["steps"], 3)
        for row in rows:
            # Errors over the first 200 images of each test split.
            for split in ("familiar_error", "novel_error"):
                self.assertBetween(row[split], 0.0, 1.0)
                self.assertAlmostEqual(
                    row[split] * 200, round(row[split] * 200)
                )
        for name in (
            "latent_space.png",
            "capsnet_reconstructions.png",
            "em_vote_distances.png",
            "generative_reconstructions.png",
            "generative_templates.png",
        ):
            self.assertTrue(os.path.exists(os.path.join(directory, name)))

    def test_demo_runs_only_the_named_rows(self):
        directory = tempfile.mkdtemp()
        settings = {
            "model_dir": directory,
            "preset": "default:train_size=300,em_iterations=3",
            "test_size": 100,
            # What is tested is the choice of rows, not their compilation.
            "jit_compile": "false",
        }
        results = run_demo(only=["one_vs_all"], **settings)
        self.assertEqual(
            [row["model"] for row in results["rows"]],
            ["capsule regression, one-vs-all"],
        )
        # The preset's field changed, the others the default budget's.
        self.assertEqual(results["budget"]["em_iterations"], 3)
        self.assertEqual(
            results["budget"]["capsnet_epochs"], demo.Budget().capsnet_epochs
        )
        # No figure of a row not run.
        for name in ("capsnet_reconstructions.png", "em_vote_distances.png"):
            self.assertFalse(os.path.exists(os.path.join(directory, name)))
        with self.assertRaisesRegex(
            app.UsageError, r"unknown models \['cnn'\]"
        ):
            run_demo(only=["one_vs_all", "cnn"], **settings)


class QuietStartTest(tf.test.TestCase):
    def test_runs_the_module_without_native_start_up_lines(self):
        # Processes of their own: what is measured is a process's stderr.
        def run(*command):
            return subprocess.run(
                [sys.executable, *command],
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"},
            )

        plain = run(
            "-c",
            "import tensorflow as tf; tf.config.list_physical_devices()",
        )
        quiet = run(
            "-m", "examples.quiet_start", "examples.results_table", "-h"
        )
        self.assertEqual(quiet.returncode, 0, quiet.stderr[-2000:])
        self.assertIn("Usage: python -m examples.results_table", quiet.stdout)
        self.assertEqual(quiet.stderr, "")
        # Where TensorFlow prints native lines at start-up (it does on
        # CPU-only machines with the CUDA build), they are gone.
        if plain.stderr:
            self.assertNotEqual(plain.stderr, quiet.stderr)


class DistributionTest(tf.test.TestCase):
    def test_strategies_and_bad_name(self):
        self.assertIs(
            distribution.make_strategy("default"), tf.distribute.get_strategy()
        )
        mirrored = distribution.make_strategy("mirrored")
        self.assertGreaterEqual(mirrored.num_replicas_in_sync, 1)
        with self.assertRaisesRegex(ValueError, "Unknown strategy 'gpu'"):
            distribution.make_strategy("gpu")


class ResultsTableTest(tf.test.TestCase):
    def test_table_from_concatenated_results(self):
        path = os.path.join(tempfile.mkdtemp(), "results.jsonl")
        stored = {  # the schema the stored sweep was written in
            "dataset": "mnist",
            "capsule_dim": 2,
            "architecture": "multiclass",
            "test_error": 0.0626,
        }
        current = {  # `examples/runs.py`'s
            "dataset": "mnist",
            "flags": {"capsule_dim": 2, "architecture": "all_vs_all"},
            "evaluation": {"test": {"accuracy": 0.95}},
        }
        with open(path, "w") as f:
            f.write(json.dumps(stored, indent=1) + "\n" + json.dumps(current))
        table = results_table.table(results_table.read_results(path))
        self.assertIn("| mnist | 2 | 6.26 |  | 5.00 | 6.21 |", table)

    def test_help_prints_the_usage(self):
        for argv, code in ((["prog", "--help"], 0), (["prog"], 2)):
            with self.assertRaises(SystemExit) as stop:
                results_table.main(argv)
            self.assertEqual(stop.exception.code, code)


if __name__ == "__main__":
    tf.test.main()
