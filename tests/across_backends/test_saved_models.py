"""A `.keras` file saved on each Keras backend predicts the same on each
other backend. Runs where `KERAS_CAPSULES_BACKEND_PYTHONS` names one
interpreter per backend (`make test-across-backends` sets it):
`tensorflow=PATH jax=PATH torch=PATH`."""

import json
import os
import subprocess
import tempfile

from absl.testing import absltest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
_PYTHONS = os.environ.get("KERAS_CAPSULES_BACKEND_PYTHONS", "")


def _run(backend, python, command, folder):
    # JAX computes float64 (the float64 cases) only with 64-bit types on.
    environment = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "JAX_ENABLE_X64": "true",
    }
    result = subprocess.run(
        [python, "-m", "tests.across_backends.saved_models", command, folder],
        cwd=_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if result.returncode:
        raise AssertionError(f"{backend} {command}:\n{result.stderr[-4000:]}")
    return result.stdout


class SavedAcrossBackendsTest(absltest.TestCase):
    def test_each_backend_loads_what_the_others_saved(self):
        if not _PYTHONS:
            self.skipTest("KERAS_CAPSULES_BACKEND_PYTHONS is not set.")
        pythons = dict(entry.split("=", 1) for entry in _PYTHONS.split())
        self.assertEqual(set(pythons), {"tensorflow", "jax", "torch"})
        folder = tempfile.mkdtemp()
        for backend, python in pythons.items():
            _run(backend, python, "save", folder)
        records = []
        for backend, python in pythons.items():
            output = _run(backend, python, "check", folder)
            records += [json.loads(line) for line in output.splitlines()]
        # Every model, saved on each backend, loaded on each other one.
        models = {record["model"] for record in records}
        self.assertLen(records, len(models) * 6)
        for record in records:
            self.assertEqual(record["outputs"], record["saved_outputs"])
            self.assertTrue(record["close"], msg=record)


if __name__ == "__main__":
    absltest.main()
