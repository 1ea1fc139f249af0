"""Shared pytest set-up: absl flags parsed, quiet TensorFlow, fixed seeds."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# JAX computes in float64 only when asked to, before it starts; the op
# tests compare float64 against their NumPy references.
os.environ.setdefault("JAX_ENABLE_X64", "true")

from absl import flags  # noqa: E402

flags.FLAGS.mark_as_parsed()

# Folders of long runs (example scripts, research smoke runs): collected
# first, so that pytest-xdist's workers take them early and end together
# on short tests.
_LONG_RUNS = ("tests/examples/", "tests/research/")


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not item.nodeid.startswith(_LONG_RUNS))
