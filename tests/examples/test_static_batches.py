"""The `tpu` strategy's training data (issue 17), tested as far as a
machine without a TPU can: `--strategy=tpu` asks for batches of one
static shape, and every script that trains with `runs.fit` then builds
them with `drop_remainder` (test batches may stay partial: TPUStrategy
pads them itself)."""

import tempfile
from unittest import mock

import numpy as np
import tensorflow as tf
from absl import flags as absl_flags
from absl.testing import flagsaver, parameterized

from examples import (
    capsule_regression,
    distribution,
    fitting,
    train,
    train_capsnet,
    train_generative_capsules,
    train_heinsen_image,
    train_heinsen_sst,
    train_matrix_capsules,
)
from keras_capsules.datasets import epoch_order
from tests.examples.test_train_heinsen import write_tiny_treebank

FLAGS = absl_flags.FLAGS


class _DataBuilt(Exception):
    """Stops a script once its training data reach `runs.fit`."""


def training_data_of(script, **settings):
    """The function of the epoch that `script` trains on when its
    strategy needs static shapes (as the `tpu` strategy does)."""
    captured = []

    def capture(backup_dir, backup_steps, epoch_batches):
        captured.append(epoch_batches)
        raise _DataBuilt

    if not FLAGS.is_parsed():
        FLAGS.mark_as_parsed()
    settings.setdefault("model_dir", tempfile.mkdtemp())
    with (
        flagsaver.flagsaver(figures=False, **settings),
        mock.patch.object(
            distribution, "needs_static_shapes", return_value=True
        ),
        mock.patch.object(fitting, "make_backup", capture),
    ):
        try:
            script.main(["prog"])
        except _DataBuilt:
            pass
    return captured[0]


def batch_sizes(dataset):
    return [int(tf.nest.flatten(batch)[0].shape[0]) for batch in dataset]


class StaticShapesTest(tf.test.TestCase):
    def test_only_tpu_strategies_need_static_shapes(self):
        tpu = mock.Mock(spec=tf.distribute.TPUStrategy)
        self.assertTrue(distribution.needs_static_shapes(tpu))
        for name in ("default", "mirrored"):
            strategy = distribution.make_strategy(name)
            self.assertFalse(distribution.needs_static_shapes(strategy))

    def test_static_batch_size_refuses_a_partial_batch(self):
        def batches_of(drop_remainder):
            shuffled = epoch_order.epoch_batches(
                (np.arange(10),), 4, 0, drop_remainder
            )
            return lambda epoch: shuffled(epoch).map(lambda index, b: b)

        full = epoch_order.with_static_batch_size(batches_of(True), 4)(0)
        self.assertEqual(full.element_spec[0].shape, (4,))
        self.assertEqual(batch_sizes(full), [4, 4])
        partial = epoch_order.with_static_batch_size(batches_of(False), 4)(0)
        self.assertEqual(partial.element_spec[0].shape, (4,))
        with self.assertRaises(tf.errors.InvalidArgumentError):
            list(partial)


class ScriptsTest(tf.test.TestCase, parameterized.TestCase):
    """Each script on 100 training examples in batches of 32 gives 3
    full batches of static size 32 per epoch."""

    def assert_static_full_batches(self, epoch_batches):
        data = epoch_batches(tf.constant(1, tf.int64))
        for spec in tf.nest.flatten(data.element_spec):
            self.assertEqual(spec.shape[0], 32, data.element_spec)
        self.assertEqual(batch_sizes(data), [32, 32, 32])
        self.assertEqual(int(data.cardinality()), 3)

    @parameterized.named_parameters(
        ("capsnet", train_capsnet, {"preset": "small:conv_filters=8"}),
        ("heinsen_image", train_heinsen_image, {"preset": "cpu"}),
        ("matrix", train_matrix_capsules, {"model": "small"}),
        ("train", train, {"routing": "dynamic"}),
        ("generative", train_generative_capsules, {"canvas_size": 28}),
        (
            "capsule_regression",
            capsule_regression,
            {"training": "sgd", "projection_dim": 16},
        ),
    )
    def test_image_scripts(self, script, settings):
        self.assert_static_full_batches(
            training_data_of(
                script,
                dataset="procedural_shapes",
                train_size=100,
                test_size=16,
                batch_size=32,
                **settings,
            )
        )

    def test_sst_pads_every_batch_to_the_longest_sentence(self):
        data_dir = tempfile.mkdtemp()
        write_tiny_treebank(data_dir)
        epoch_batches = training_data_of(
            train_heinsen_sst,
            task="sst5",
            train_on="phrases",
            data_dir=data_dir,
            embedding_dim=8,
            batch_size=4,
        )
        data = epoch_batches(tf.constant(0, tf.int64))
        tokens, labels = data.element_spec
        self.assertEqual(tokens.shape[0], 4)
        self.assertIsNotNone(tokens.shape[1])
        self.assertEqual(labels.shape, (4, 5))
        self.assertAllEqual(set(batch_sizes(data)), {4})


if __name__ == "__main__":
    tf.test.main()
