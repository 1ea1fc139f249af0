"""Shared pytest set-up: absl flags parsed, quiet TensorFlow, fixed seeds."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import flags  # noqa: E402

flags.FLAGS.mark_as_parsed()
