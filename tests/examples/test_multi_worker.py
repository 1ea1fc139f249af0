"""Multi-worker training (issue 17): an example script run by two local
workers (`--strategy=multi_worker`, `TF_CONFIG` on localhost ports,
sharing `--model_dir`) gives what one process gives with the same global
batch: the same history, evaluation and weights. The chief writes to
`--model_dir`; the other worker to `--model_dir/workers/1`."""

import json
import os
import socket
import subprocess
import tempfile

import numpy as np
import pytest
import tensorflow as tf
from absl.testing import parameterized

import keras_capsules  # noqa: F401  (registers the saved classes)
from tests.examples.script_runs import (
    ROOT,
    environment,
    load_run,
    script_command,
)
from tests.examples.test_train_heinsen import write_tiny_treebank

_TIMEOUT = 600  # seconds, for one run of a script
_CAPSNET = [
    "--dataset=procedural_shapes",
    "--train_size=128",
    "--test_size=32",
    "--batch_size=32",
    "--preset=small:conv_filters=8,primary_capsule_types=2,decoder_units=16",
    "--epochs=2",
]


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for server in sockets:
        server.bind(("localhost", 0))
    ports = [server.getsockname()[1] for server in sockets]
    for server in sockets:
        server.close()
    return ports


def run_script(script, flags, model_dir, workers=1):
    """Runs `examples.<script>` in `workers` processes (one: the default
    strategy; more: a local multi-worker cluster) and waits for them."""
    arguments = script_command(script, flags, model_dir)
    if workers == 1:
        configs = [None]
    else:
        arguments.append("--strategy=multi_worker")
        cluster = {
            "worker": [f"localhost:{port}" for port in free_ports(workers)]
        }
        configs = [
            json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": k}}
            )
            for k in range(workers)
        ]
    processes = []
    for config in configs:
        processes.append(
            subprocess.Popen(
                arguments,
                cwd=ROOT,
                env=environment(**({"TF_CONFIG": config} if config else {})),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    errors = [process.communicate(timeout=_TIMEOUT)[1] for process in processes]
    for process, error in zip(processes, errors):
        if process.returncode != 0:
            raise AssertionError(error[-3000:])


class _MultiWorkerCase(tf.test.TestCase, parameterized.TestCase):
    def run_both(self, script, flags):
        """Runs the script in one process and on two workers; returns the
        two `--model_dir`s."""
        root = tempfile.mkdtemp()
        single_dir = os.path.join(root, "single")
        cluster_dir = os.path.join(root, "cluster")
        run_script(script, flags, single_dir)
        run_script(script, flags, cluster_dir, workers=2)
        return single_dir, cluster_dir

    def assert_two_workers_match_one_process(
        self,
        script,
        flags,
        model_file,
        backs_up=True,
        weight_tolerance=1e-5,
        compare_accuracy=True,
    ):
        """Both workers' history and evaluation agree with one process's
        to a relative 1e-4, their weights to `weight_tolerance` of the
        weights' scale."""
        single_dir, cluster_dir = self.run_both(script, flags)
        expected, expected_weights = load_run(single_dir, model_file)
        for directory in (cluster_dir, os.path.join(cluster_dir, "workers/1")):
            results, weights = load_run(directory, model_file)
            for key in ("history", "evaluation"):
                self.assertAllClose(
                    continuous(results[key], compare_accuracy),
                    continuous(expected[key], compare_accuracy),
                    rtol=1e-4,
                    atol=1e-5,
                )
            for actual, wanted in zip(weights or (), expected_weights or ()):
                scale = max(1.0, float(np.max(np.abs(wanted))))
                self.assertAllClose(
                    actual, wanted, atol=weight_tolerance * scale
                )
        # Only the chief writes the backup, which both resume from.
        backup_dir = os.path.join(cluster_dir, "backup")
        self.assertEqual(os.path.isdir(backup_dir), backs_up)


def continuous(entries, compare_accuracy):
    """`entries` without accuracies unless `compare_accuracy`: a count of
    examples on one side of a boundary, which a difference in the last
    float digits can move by one example."""
    if isinstance(entries, dict):
        return {
            key: continuous(value, compare_accuracy)
            for key, value in entries.items()
            if compare_accuracy or "accuracy" not in key
        }
    return entries


class MultiWorkerTest(_MultiWorkerCase):
    def test_train_capsnet(self):
        self.assert_two_workers_match_one_process(
            "train_capsnet", _CAPSNET, "capsnet.keras"
        )


# Two workers and one process per script: minutes on two cores.
@pytest.mark.slow
class MultiWorkerSlowTest(_MultiWorkerCase):
    @parameterized.parameters("dynamic", "em", "heinsen", "regression")
    def test_train(self, routing):
        self.assert_two_workers_match_one_process(
            "train",
            [
                f"--routing={routing}",
                "--dataset=procedural_shapes",
                "--train_size=64",
                "--test_size=32",
                "--batch_size=16",
                "--primary_types=2",
                "--epochs=2",
            ],
            None,
        )

    def test_train_heinsen_image(self):
        # No mixup: it pairs examples within each replica's batch, so two
        # workers mix other pairs than one process. Batch norm sums the
        # moments of the global batch across workers, in another order
        # than one device: measured, losses agree to 3e-6, weights to 4e-4
        # of their scale, and one example's prediction moves.
        self.assert_two_workers_match_one_process(
            "train_heinsen_image",
            [
                "--dataset=procedural_shapes",
                "--preset=cpu",
                "--mixup_alpha=0",
                "--train_size=64",
                "--test_size=32",
                "--batch_size=16",
                "--filters=8",
                "--num_parts=4",
                "--epochs=2",
            ],
            "heinsen_image.keras",
            weight_tolerance=1e-3,
            compare_accuracy=False,
        )

    def test_train_heinsen_sst(self):
        data_dir = tempfile.mkdtemp()
        write_tiny_treebank(data_dir)
        # The 4 polar root sentences in one batch, 2 per worker: replicas
        # of unequal batches weigh their examples unequally.
        self.assert_two_workers_match_one_process(
            "train_heinsen_sst",
            [
                "--task=sst2",
                "--train_on=roots",
                "--mixup_alpha=0",
                f"--data_dir={data_dir}",
                "--embedding_dim=8",
                "--batch_size=4",
                "--epochs=2",
            ],
            "heinsen_sst.keras",
        )

    def test_train_matrix_capsules(self):
        # XLA off in both: CPU workers cannot compile their collectives.
        self.assert_two_workers_match_one_process(
            "train_matrix_capsules",
            [
                "--dataset=procedural_shapes",
                "--model=small",
                "--train_size=64",
                "--test_size=32",
                "--batch_size=16",
                "--epochs=2",
                "--preset=standardized:num_iterations=2",
                "--jit_compile=false",
            ],
            "matrix_capsnet.keras",
        )

    @parameterized.parameters("sgd", "em")
    def test_capsule_regression(self, training):
        self.assert_two_workers_match_one_process(
            "capsule_regression",
            [
                "--dataset=procedural_shapes",
                f"--training={training}",
                "--capsule_dim=2",
                "--train_size=600",
                "--projection_dim=32",
                "--epochs=2",
                "--max_iterations=3",
            ],
            None,
            backs_up=training == "sgd",  # EM keeps its own state file.
        )

    def test_train_generative_capsules(self):
        # Each worker draws its rows of the global batch's noise: before,
        # both drew the noise of a whole batch for their half, and the
        # bound was 0.6% apart after 2 epochs; now 1e-5.
        single_dir, cluster_dir = self.run_both(
            "train_generative_capsules",
            [
                "--dataset=procedural_shapes",
                "--canvas_size=28",
                "--train_size=64",
                "--epochs=2",
                "--batch_size=32",
                "--probe_train_size=64",
                "--probe_test_size=32",
                "--probe_epochs=1",
                "--rotations=0",
                "--vae_epochs=0",
                "--free_form_steps=2",
                "--free_form_examples=8",
                "--jit_compile=false",
            ],
        )
        expected, _ = load_run(single_dir)
        for directory in (cluster_dir, os.path.join(cluster_dir, "workers/1")):
            history = load_run(directory)[0]["history"]
            # The bound's terms per example. (The top layer's measures
            # are statistics of each replica's share of the batch, and
            # validation follows weights that Adam's normalised steps
            # move apart where gradients are near 0: neither compared.)
            scale = np.abs(expected["history"]["elbo"])
            for term in ("elbo", "reconstruction", "template_kl", "top_kl"):
                self.assertAllClose(
                    history[term],
                    expected["history"][term],
                    rtol=0,
                    atol=1e-4 * scale,
                    msg=term,
                )
        self.assertTrue(os.path.isdir(os.path.join(cluster_dir, "backup")))


if __name__ == "__main__":
    tf.test.main()
