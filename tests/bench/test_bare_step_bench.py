"""The bare-step benchmark times Keras's training step and the backend's
own beside it on the backend the suite runs (its timings are measured,
not tested)."""

import json
import subprocess
import sys
import unittest

import keras
from absl.testing import absltest


@unittest.skipIf(
    keras.backend.backend() == "torch", "Bare steps: TensorFlow and JAX."
)
class BareStepBenchTest(absltest.TestCase):
    def test_one_case_reports_both_steps(self):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.bare_step",
                "--shapes=heinsen_64_to_5_b20",
                "--repeats=1",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        record = json.loads(result.stdout.splitlines()[-1])
        self.assertEqual(record["backend"], keras.backend.backend())
        self.assertGreater(record["keras_examples_per_second"], 0)
        self.assertGreater(record["bare_examples_per_second"], 0)


if __name__ == "__main__":
    absltest.main()
