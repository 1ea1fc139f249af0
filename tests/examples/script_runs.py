"""Example scripts run as separate processes (`python -m examples.X`), as
a user runs them: their command, environment and results."""

import json
import os
import sys

import keras
from absl import flags as absl_flags
from absl.testing import flagsaver

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


# The scripts that write figures (and take `--figures`).
_FIGURE_SCRIPTS = (
    "capsule_regression",
    "train_capsnet",
    "train_generative_capsules",
)


def script_command(script, flags, model_dir):
    """The command line of `examples.<script>` with `flags`, writing no
    figures, into `model_dir`."""
    figures = ["--figures=false"] if script in _FIGURE_SCRIPTS else []
    return [
        sys.executable,
        "-m",
        f"examples.{script}",
        *flags,
        *figures,
        f"--model_dir={model_dir}",
    ]


def environment(**variables):
    """This process's environment, with TensorFlow quiet, the repository
    importable and `variables` added."""
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONPATH": ROOT,
        **variables,
    }


def load_run(model_dir, model_file=None):
    """`(results.json, weights of model_file or None)` of a finished run."""
    with open(os.path.join(model_dir, "results.json")) as file:
        results = json.load(file)
    weights = None
    if model_file:
        path = os.path.join(model_dir, model_file)
        weights = keras.saving.load_model(path).get_weights()
    return results, weights


def run_in_process(script, **settings):
    """Runs `script.main` with the flags `settings` (absl's flagsaver: the
    flags are restored after); returns its `results.json`."""
    if not absl_flags.FLAGS.is_parsed():
        absl_flags.FLAGS.mark_as_parsed()
    with flagsaver.flagsaver(**settings):
        script.main(["prog"])
    with open(os.path.join(settings["model_dir"], "results.json")) as f:
        return json.load(f)
