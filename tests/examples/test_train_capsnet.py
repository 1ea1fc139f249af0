"""The CapsNet example: training (in-process), exporting and serving (in
a fresh process: serving must not need this one). Resuming after a kill:
test_kill_and_resume.py."""

import os
import subprocess
import sys
import tempfile
import textwrap

import keras
import numpy as np
import tensorflow as tf
from absl import flags as absl_flags

import keras_capsules  # noqa: F401  (registers the saved classes)
from examples import train_capsnet
from tests.examples.script_runs import run_in_process

FLAGS = absl_flags.FLAGS

_SMALL_FLAGS = {
    "dataset": "procedural_shapes",
    "train_size": 256,
    "test_size": 64,
    "batch_size": 32,
    "preset": "small:conv_filters=16,primary_capsule_types=4,decoder_units=32",
}


def run_python(*args, code=None):
    command = [sys.executable]
    command += ["-c", textwrap.dedent(code)] if code else list(args)
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        raise AssertionError(result.stderr[-3000:])
    return result.stdout


def serve_in_fresh_process(export_dir, inputs, directory):
    """Loads the SavedModel in `export_dir` in a new process, calls its
    `serve` signature on the array `inputs` and returns the outputs as a
    dict of arrays."""
    inputs_path = os.path.join(directory, "serve_inputs.npy")
    np.save(inputs_path, inputs)
    served_path = os.path.join(directory, "served.npz")
    run_python(
        code=f"""
        import numpy as np, tensorflow as tf
        served = tf.saved_model.load({export_dir!r})
        outputs = served.serve(tf.constant(np.load({inputs_path!r})))
        arrays = {{name: value.numpy() for name, value in outputs.items()}}
        np.savez({served_path!r}, **arrays)
        """
    )
    return dict(np.load(served_path))


def train_in_process(**settings):
    """Runs `train_capsnet.main` on small data with the flags `settings`."""
    return run_in_process(train_capsnet, **_SMALL_FLAGS, **settings)


class TrainCapsNetTest(tf.test.TestCase):
    def test_exported_model_serves_the_keras_outputs_in_a_fresh_process(self):
        directory = tempfile.mkdtemp()
        export_dir = os.path.join(directory, "export")
        results = train_in_process(
            epochs=1, model_dir=directory, export_dir=export_dir
        )
        self.assertIn("test_novel", results["evaluation"])
        for name in ("reconstructions.png", "perturbations.png", "logs"):
            self.assertTrue(os.path.exists(os.path.join(directory, name)))
        batch = np.random.default_rng(0).uniform(size=(5, 28, 28, 1))
        served = serve_in_fresh_process(
            export_dir, batch.astype(np.float32), directory
        )
        model = keras.models.load_model(
            os.path.join(directory, "capsnet.keras")
        )
        capsules = model.encode(batch.astype(np.float32))
        lengths = model(batch.astype(np.float32))
        self.assertEqual(served["capsules"].shape, (5, 10, 16))
        self.assertAllClose(served["capsules"], capsules, atol=1e-6)
        self.assertAllClose(served["probabilities"], lengths, atol=1e-6)


if __name__ == "__main__":
    tf.test.main()
