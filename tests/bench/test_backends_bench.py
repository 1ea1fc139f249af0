"""The backends benchmark runs a training step and reports its fields
(its timings are measured, not tested)."""

import json
import subprocess
import sys

from absl.testing import absltest

from bench import routing, routing_shapes


class BackendsBenchTest(absltest.TestCase):
    def test_one_case_reports_a_step_and_its_memory(self):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.backends",
                "--case=heinsen_64_to_5_b20",
                "--repeats=1",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        record = json.loads(result.stdout.splitlines()[-1])
        self.assertEqual(record["backend"], "tensorflow")
        self.assertGreater(record["examples_per_second"], 0)
        self.assertGreaterEqual(
            record["peak_rss_mb"], record["baseline_rss_mb"]
        )

    def test_the_routing_benchmark_times_the_same_shapes(self):
        self.assertIs(routing.SHAPES, routing_shapes.SHAPES)


if __name__ == "__main__":
    absltest.main()
