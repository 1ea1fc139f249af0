"""BUILD covers every module and test file (STYLE.md section 10)."""

import glob
import os
import re

import tensorflow as tf

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build_text():
    with open(os.path.join(_ROOT, "BUILD")) as f:
        return f.read()


def _covered_by(path, text):
    """True when BUILD names the file or globs its folder."""
    folder = os.path.dirname(path)
    return f'"{path}"' in text or f'glob(["{folder}/*.py"])' in text


class BuildTest(tf.test.TestCase):
    def test_every_package_module_has_a_library(self):
        text = _build_text()
        for path in glob.glob(
            "keras_capsules/**/*.py", root_dir=_ROOT, recursive=True
        ):
            self.assertTrue(_covered_by(path, text), f"{path} has no target")

    def test_every_test_file_has_a_py_test(self):
        text = _build_text()
        tests = set(
            re.findall(
                # The test file is the first of the target's sources.
                r'py_test\(\s*name = "[^"]+",\s*srcs = \[\s*"([^"]+)"',
                text,
            )
        )
        for path in glob.glob(
            "tests/**/test_*.py", root_dir=_ROOT, recursive=True
        ):
            self.assertIn(path, tests, f"{path} has no py_test in BUILD")

    def test_every_script_has_a_binary(self):
        text = _build_text()
        for pattern in ("examples/*.py", "bench/*.py", "research/*.py"):
            for path in glob.glob(pattern, root_dir=_ROOT):
                if path.endswith("__init__.py"):
                    continue
                with open(os.path.join(_ROOT, path)) as f:
                    is_script = '__name__ == "__main__"' in f.read()
                if is_script:
                    self.assertIn(
                        f'main = "{path}"', text, f"{path} has no py_binary"
                    )
                else:
                    self.assertTrue(
                        _covered_by(path, text), f"{path} has no target"
                    )


if __name__ == "__main__":
    tf.test.main()
