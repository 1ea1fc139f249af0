"""The code in the README and the documentation runs as written.

Each page's Python blocks run in order in one namespace (a page reads
like a notebook), in an empty working folder. Each `python -m
examples.NAME` or `python -m bench.NAME` command in a page's shell
blocks names a module that exists and flags that it defines, with values
they accept; each `bash PATH` names a script that exists.
"""

import glob
import os
import re
import shlex
import sys
import tempfile

import keras
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver, parameterized

from tests import markdown_code

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(
    ["README.md"] + glob.glob("docs/**/*.md", root_dir=_ROOT, recursive=True)
)


def _page_text(page):
    with open(os.path.join(_ROOT, page)) as f:
        return f.read()


def _named(pages):
    """`(test name, page)` for `parameterized.named_parameters`."""
    return [(re.sub(r"\W", "_", page[: -len(".md")]), page) for page in pages]


class CodeBlocksTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.named_parameters(
        _named(p for p in PAGES if markdown_code.python_blocks(_page_text(p)))
    )
    def test_python_blocks_run(self, page):
        blocks = markdown_code.python_blocks(_page_text(page))
        namespace = {"__name__": "__docs__"}
        policy = keras.config.dtype_policy()
        with tempfile.TemporaryDirectory() as folder:
            previous = os.getcwd()
            os.chdir(folder)
            keras.utils.set_random_seed(0)
            try:
                for index, block in enumerate(blocks):
                    code = compile(block, f"{page}, block {index + 1}", "exec")
                    exec(code, namespace)  # noqa: S102
            finally:
                os.chdir(previous)
                keras.config.set_dtype_policy(policy)
                # No garbage collection: in a worker that has run many tests
                # it takes seconds, and the heap is collected as it grows.
                keras.backend.clear_session(free_memory=False)

    @parameterized.named_parameters(
        _named(p for p in PAGES if markdown_code.commands(_page_text(p)))
    )
    def test_commands_name_what_exists(self, page):
        for command in markdown_code.commands(_page_text(page)):
            words = shlex.split(command)
            with self.subTest(command=command):
                if words[0] == "bash":
                    self.assertTrue(
                        os.path.exists(os.path.join(_ROOT, words[1])),
                        f"{page}: no script {words[1]}",
                    )
                    continue
                module = words[words.index("-m") + 1]
                _check_flags(module, words[words.index("-m") + 2 :])


def _check_flags(module, arguments):
    """Imports `module` and parses `arguments` with absl, leaving the
    flags as they were: an unknown flag or a value its flag refuses
    raises, and so does a settings flag (`--recipe=NAME:field=value`)
    that names no settings, where the module can say
    (`check_settings_flags`)."""
    __import__(module)
    script = sys.modules[module]
    arguments = [a for a in arguments if not a.startswith("--helpfull")]
    with flagsaver.flagsaver():
        flags.FLAGS.unparse_flags()
        try:
            flags.FLAGS([module, *arguments])
            if hasattr(script, "check_settings_flags"):
                script.check_settings_flags()
        finally:
            flags.FLAGS.unparse_flags()
            flags.FLAGS.mark_as_parsed()


def test_pages_are_found():
    assert "docs/index.md" in PAGES and "docs/guides/training.md" in PAGES
    assert not [p for p in PAGES if re.search(r"research/", p)]


if __name__ == "__main__":
    tf.test.main()
