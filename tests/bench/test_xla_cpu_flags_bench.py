"""The XLA:CPU flag benchmark's plumbing (its timings are measured, not
tested): every case it names exists, and each flag set reaches the child
process only."""

import json
import os
import subprocess
import sys
from unittest import mock

import tensorflow as tf

from bench import measure, xla_cpu_flags

_ROOT = os.path.dirname(os.path.dirname(measure.__file__))

# What each benchmark module can run, printed by a fresh process: the
# benchmarks define flags of the same names, so one process imports one.
_LIST_CASES = {
    "bench.routing": (
        "from bench import routing\n"
        "print(json.dumps([f'{name}:xla' for name in routing.SHAPES]))"
    ),
    "bench.em_routing": (
        "from bench import em_routing\nprint(json.dumps(em_routing._CASES))"
    ),
}


def _cases_of(module):
    result = subprocess.run(
        [sys.executable, "-c", "import json\n" + _LIST_CASES[module]],
        capture_output=True,
        text=True,
        check=True,
        cwd=_ROOT,
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


class XlaCpuFlagsBenchTest(tf.test.TestCase):
    def test_every_case_names_a_case_of_its_benchmark(self):
        known = {module: _cases_of(module) for module in _LIST_CASES}
        for module, case, _ in xla_cpu_flags.CASES.values():
            self.assertIn(case, known[module])

    def test_flags_reach_the_child_only(self):
        seen = []

        def child(module, case, flags, environment=None):
            seen.append((module, case, flags, environment))
            return {"seconds_per_step": 1.0}

        with mock.patch.object(measure, "run_case_in_subprocess", child):
            with mock.patch.dict(os.environ, {"XLA_FLAGS": "--user_flag"}):
                xla_cpu_flags.run_with_xla_flags(
                    xla_cpu_flags.FLAG_SETS["fast_math"],
                    "bench.routing",
                    "case:xla",
                    ["--repeats=2"],
                )
                self.assertEqual(os.environ["XLA_FLAGS"], "--user_flag")
            xla_cpu_flags.run_with_xla_flags("", "bench.routing", "c", [])
        self.assertEqual(
            seen,
            [
                (
                    "bench.routing",
                    "case:xla",
                    ["--repeats=2"],
                    {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"},
                ),
                ("bench.routing", "c", [], {"XLA_FLAGS": ""}),
            ],
        )


if __name__ == "__main__":
    tf.test.main()
