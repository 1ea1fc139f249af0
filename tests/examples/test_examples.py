"""Smoke tests of the example scripts on small procedural data."""

import json
import os
import subprocess
import sys
import tempfile

import tensorflow as tf
from absl.testing import flagsaver

from examples import capsule_regression, distribution, results_table


class ExamplesTest(tf.test.TestCase):
    def test_capsule_regression_em_writes_results_and_figures(self):
        directory = tempfile.mkdtemp()
        with flagsaver.flagsaver(
            dataset="procedural_shapes",
            capsule_dim=2,
            train_size=600,
            projection_dim=32,
            max_iterations=6,
            output_dir=directory,
        ):
            capsule_regression.main(["prog"])
        with open(os.path.join(directory, "results.json")) as f:
            results = json.load(f)
        self.assertLess(results["test_error"], 0.5)
        self.assertIn("test_novel_error", results)
        for name in ("latent_space.png", "prototypes.png", "history.json"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)))

    def test_capsule_regression_sgd_saves_model(self):
        directory = tempfile.mkdtemp()
        with flagsaver.flagsaver(
            dataset="procedural_shapes",
            strategy="mirrored",
            training="sgd",
            capsule_dim=2,
            train_size=600,
            projection_dim=32,
            epochs=2,
            figures=False,
            output_dir=directory,
        ):
            capsule_regression.main(["prog"])
        self.assertTrue(os.path.exists(os.path.join(directory, "model.keras")))

    def test_demo_runs_small(self):
        # A subprocess: the demo's flags share names with the example's.
        directory = tempfile.mkdtemp()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "examples.demo",
                f"--output_dir={directory}",
                "--train_size=300",
                "--max_iterations=3",
                "--epochs=1",
                "--capsnet_epochs=1",
                "--heinsen_epochs=1",
                "--matrix_train_size=64",
                "--generative_train_size=64",
                "--generative_epochs=1",
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertIn("Test error on the procedural shapes", result.stdout)
        with open(os.path.join(directory, "results.json")) as f:
            rows = json.load(f)
        self.assertLen(rows, 9)
        self.assertEqual(rows[-2]["model"], "matrix capsules, EM routing")
        self.assertEqual(rows[-1]["model"], "generative capsules (probe)")
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
        command = [
            sys.executable,
            "-m",
            "examples.demo",
            f"--output_dir={directory}",
            "--train_size=300",
            "--matrix_train_size=64",
        ]
        result = subprocess.run(
            [*command, "--only=matrix"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        with open(os.path.join(directory, "results.json")) as f:
            rows = json.load(f)
        self.assertEqual(
            [row["model"] for row in rows], ["matrix capsules, EM routing"]
        )
        self.assertFalse(
            os.path.exists(os.path.join(directory, "latent_space.png"))
        )
        result = subprocess.run(
            [*command, "--only=matrix,cnn"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("unknown models ['cnn']", result.stderr)


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
        runs = [
            {
                "dataset": "mnist",
                "capsule_dim": 2,
                "architecture": arch,
                "test_error": error,
            }
            for arch, error in (("multiclass", 0.0626), ("all_vs_all", 0.05))
        ]
        with open(path, "w") as f:
            f.write(json.dumps(runs[0], indent=1) + "\n" + json.dumps(runs[1]))
        table = results_table.table(results_table.read_results(path))
        self.assertIn("| mnist | 2 | 6.26 |  | 5.00 | 6.21 |", table)


if __name__ == "__main__":
    tf.test.main()
