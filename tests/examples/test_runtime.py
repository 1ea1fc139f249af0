"""The process-wide settings the examples and benchmarks run with."""

import os
import subprocess
import sys
import unittest
from unittest import mock

from examples import runtime

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _setting_in_fresh_process(**environment):
    """`TF_ENABLE_ONEDNN_OPTS` as a fresh process that imports the
    `examples` package sees it, started with `environment` (None
    values: unset)."""
    env = {
        key: value
        for key, value in {**os.environ, **environment}.items()
        if value is not None
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, examples; "
            "print(os.environ.get('TF_ENABLE_ONEDNN_OPTS'))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=_ROOT or ".",
        env=env,
    )
    return result.stdout.strip()


class RuntimeTest(unittest.TestCase):
    def test_onednn_turned_on_only_where_unset(self):
        with mock.patch.dict(os.environ, clear=False) as environment:
            environment.pop(runtime.ONEDNN_VARIABLE, None)
            self.assertEqual(runtime.onednn_setting(), "default")
            runtime.use_onednn_unless_set()
            self.assertEqual(environment[runtime.ONEDNN_VARIABLE], "1")
            environment[runtime.ONEDNN_VARIABLE] = "0"
            runtime.use_onednn_unless_set()
            self.assertEqual(runtime.onednn_setting(), "0")

    def test_importing_the_examples_sets_it_before_any_script(self):
        self.assertEqual(
            _setting_in_fresh_process(TF_ENABLE_ONEDNN_OPTS=None), "1"
        )
        self.assertEqual(
            _setting_in_fresh_process(TF_ENABLE_ONEDNN_OPTS="0"), "0"
        )


if __name__ == "__main__":
    unittest.main()
