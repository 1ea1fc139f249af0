"""TensorFlow's process-wide CPU settings the examples and benchmarks run
with. Importing this module does not import TensorFlow: its settings
must be made before TensorFlow is imported."""

import os

ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"


def use_onednn_unless_set():
    """Turns TensorFlow's oneDNN CPU kernels on, unless
    `TF_ENABLE_ONEDNN_OPTS` is already set (then the user's choice
    stands). Has no effect once TensorFlow has been imported."""
    os.environ.setdefault(ONEDNN_VARIABLE, "1")


def onednn_setting():
    """`TF_ENABLE_ONEDNN_OPTS` as this process has it (`"1"`, `"0"`), or
    `"default"` where it is unset and TensorFlow decides by the CPU."""
    return os.environ.get(ONEDNN_VARIABLE, "default")
