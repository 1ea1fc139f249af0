"""Kill and resume (issue 17): an example run killed with SIGKILL, during a
backup write, at start-up and at random moments, and run again with the
same command after each kill, finishes and ends where an uninterrupted
run ends: the same epochs, history, evaluation and weights."""

import os
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest
import tensorflow as tf

import keras_capsules  # noqa: F401  (registers the saved classes)
from tests.examples.script_runs import (
    ROOT,
    environment,
    load_run,
    script_command,
)

_TIMEOUT = 300  # seconds, for one run of a script


def command(script, model_dir, flags):
    """The script's command with a backup after every step, without XLA
    (what is tested is resuming; each script's XLA compilation is tested
    with the script)."""
    return script_command(
        script, [*flags, "--backup_steps=1", "--jit_compile=false"], model_dir
    )


def run_to_the_end(arguments):
    result = subprocess.run(
        arguments,
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
    )
    if result.returncode != 0:
        raise AssertionError(result.stderr[-3000:])


def partial_backups(backup_dir):
    if not os.path.isdir(backup_dir):
        return []
    return [name for name in os.listdir(backup_dir) if name.startswith(".")]


def kill_when(arguments, ready, extra_delay=0.0):
    """Starts the command, waits until `ready()` (polled every
    millisecond), waits `extra_delay` seconds, then kills it with SIGKILL.
    Returns whether it was killed (not finished first)."""
    process = subprocess.Popen(
        arguments,
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + _TIMEOUT
    while process.poll() is None and not ready():
        if time.monotonic() > deadline:
            break
        time.sleep(0.001)
    time.sleep(extra_delay)
    killed = process.poll() is None
    process.send_signal(signal.SIGKILL)
    process.wait()
    return killed


def modified(path):
    """The modification time of `path`, None if it does not exist."""
    try:
        return os.path.getmtime(path)
    except FileNotFoundError:
        return None


class KillAndResumeTest(tf.test.TestCase):
    def assert_survives_kills(
        self, script, flags, model_file, at_start_up=True, random_kills=1
    ):
        root = tempfile.mkdtemp()
        reference_dir = os.path.join(root, "uninterrupted")
        run_to_the_end(command(script, reference_dir, flags))

        model_dir = os.path.join(root, "killed")
        arguments = command(script, model_dir, flags)
        backup_dir = os.path.join(model_dir, "backup")
        rng = np.random.default_rng(0)
        if at_start_up:  # Before any backup (3 s: TensorFlow still loads).
            self.assertTrue(kill_when(arguments, lambda: True, 3.0))
        # During a backup write: a partial folder exists only then.
        self.assertTrue(
            kill_when(arguments, lambda: partial_backups(backup_dir))
        )
        self.assertNotEmpty(partial_backups(backup_dir))
        # At random moments of training, after some backup.
        latest = os.path.join(backup_dir, "latest")
        for _ in range(random_kills):
            before = modified(latest)
            kill_when(
                arguments,
                lambda: modified(latest) != before,  # noqa: B023
                float(rng.uniform(0.0, 0.5)),
            )
        run_to_the_end(arguments)

        results, weights = load_run(model_dir, model_file)
        expected_results, expected_weights = load_run(reference_dir, model_file)
        for key in ("history", "evaluation", "train_examples"):
            self.assertAllClose(
                results[key], expected_results[key], rtol=1e-5, atol=1e-6
            )
        for actual, expected in zip(weights, expected_weights):
            self.assertAllClose(actual, expected, rtol=1e-5, atol=1e-6)

    def test_train_capsnet(self):
        self.assert_survives_kills(
            "train_capsnet",
            [
                "--dataset=procedural_shapes",
                "--train_size=128",
                "--test_size=32",
                "--batch_size=32",
                "--preset=small:conv_filters=16,primary_capsule_types=4,"
                "decoder_units=32",
                "--epochs=3",
            ],
            "capsnet.keras",
        )

    # Long (four runs of the script); what differs from CapsNet's run,
    # resuming mixup's draws and the epoch's crops, is tested in the
    # default suite by test_mixup.py and test_epoch_order.py.
    @pytest.mark.slow
    def test_train_heinsen_image(self):
        # Mixup draws from a seed generator; crops from the epoch's seed:
        # what differs from CapsNet's run is resuming them, so a kill
        # during a backup and one in training (the start-up kill and the
        # backup format are CapsNet's test's).
        self.assert_survives_kills(
            "train_heinsen_image",
            [
                "--dataset=procedural_shapes",
                "--preset=cpu",
                "--mixup_alpha=0.2",
                "--pad_pixels=2",
                "--train_size=128",
                "--test_size=32",
                "--batch_size=16",
                "--filters=8",
                "--num_parts=4",
                "--epochs=3",
            ],
            "heinsen_image.keras",
            at_start_up=False,
        )


if __name__ == "__main__":
    tf.test.main()
