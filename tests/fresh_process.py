"""Test code that runs in a Python process of its own: for what must be
set before TensorFlow starts (logical devices), or must start from
nothing (a saved model loaded without the code that made it)."""

import os
import subprocess
import sys
import textwrap

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The first lines of a script whose TensorFlow has two logical CPU
# devices, the replicas of `tf.distribute.MirroredStrategy(["CPU:0",
# "CPU:1"])`.
TWO_CPU_DEVICES = """\
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
"""


def run_python(*sources, timeout=300):
    """Runs the `sources` (each dedented on its own), one after another,
    as one script with this interpreter from the repository root, so that
    it imports `tests` and `keras_capsules` as the tests do; returns the
    finished `subprocess.CompletedProcess`, its output as text."""
    script = "\n".join(textwrap.dedent(source) for source in sources)
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
