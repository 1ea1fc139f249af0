"""`ResumableBackup`: a run interrupted at any step resumes from its last
backup and ends where an uninterrupted run ends; a backup that a kill cut
short is never loaded. On every backend with epochs of
`keras.utils.PyDataset`s; with `tf.data` epochs where TensorFlow is
installed."""

import importlib.util
import os
import tempfile
import unittest
import warnings

import keras
import numpy as np
from absl.testing import parameterized

from keras_capsules.callbacks import ResumableBackup
from keras_capsules.datasets import ArrayBatches
from tests import every_backend

TENSORFLOW_INSTALLED = importlib.util.find_spec("tensorflow") is not None

_EPOCHS = 3
_BATCHES = 4  # per epoch
_RNG = np.random.default_rng(0)
_FEATURES = _RNG.normal(size=(_BATCHES * 8, 3)).astype("float32")
_TARGETS = _FEATURES @ np.array([[1.0], [-2.0], [0.5]], "float32")


def py_dataset_epoch_batches(epoch):
    """Batches in an order, with noise, that come from the epoch alone."""
    rng = np.random.default_rng([epoch, 7])
    order = rng.permutation(len(_FEATURES))
    noisy = _FEATURES + 0.1 * rng.normal(size=_FEATURES.shape)
    return ArrayBatches((noisy.astype("float32"), _TARGETS), 8, order)


def tf_data_epoch_batches(epoch):
    """Batches in an order, with noise, that come from the epoch alone."""
    import tensorflow as tf  # noqa: PLC0415

    seed = tf.stack([tf.cast(epoch, tf.int32), 7])
    order = tf.argsort(tf.random.stateless_uniform([len(_FEATURES)], seed))
    data = tf.data.Dataset.from_tensor_slices(order).batch(8)

    def gather_with_noise(index, rows):
        features = tf.gather(_FEATURES, rows)
        noise = tf.random.stateless_normal(
            tf.shape(features), seed + tf.cast(index, tf.int32)
        )
        return features + 0.1 * noise, tf.gather(_TARGETS, rows)

    return data.enumerate().map(gather_with_noise)


def make_model():
    keras.utils.set_random_seed(0)
    # Dropout draws from a seed generator, whose state the backup keeps.
    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(8),
            keras.layers.Dropout(0.2, seed=1),
            keras.layers.Dense(1),
        ]
    )
    # A compiled metric: Keras builds its state only in the first batch.
    model.compile(keras.optimizers.Adam(0.05), "mse", metrics=["mae"])
    return model


class Interrupt(keras.callbacks.Callback):
    """Stops a run, as a kill would, after `steps` steps in all."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps
        self.done = 0

    def on_train_batch_end(self, batch, logs=None):
        self.done += 1
        if self.done == self.steps:
            raise KeyboardInterrupt


def train(epoch_batches, backup_dir, save_freq=2, interrupt_after=None):
    """Fits a fresh model with `backup.fit`; returns it and the history."""
    model = make_model()
    backup = ResumableBackup(backup_dir, save_freq=save_freq)
    callbacks = [Interrupt(interrupt_after)] if interrupt_after else []
    history = backup.fit(
        model, epoch_batches, _EPOCHS, callbacks=callbacks, verbose=0
    )
    return model, history


class PyDatasetBackupTest(every_backend.TestCase):
    epoch_batches = staticmethod(py_dataset_epoch_batches)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        model, history = cls.train(tempfile.mkdtemp())
        cls.expected_weights = model.get_weights()
        cls.expected_history = history

    @classmethod
    def train(cls, backup_dir, **options):
        return train(cls.epoch_batches, backup_dir, **options)

    def assert_weights_expected(self, model):
        for actual, expected in zip(model.get_weights(), self.expected_weights):
            self.assertAllClose(actual, expected, rtol=1e-6, atol=1e-6)

    # Backups after 2 steps of each epoch and at its end (after the last
    # step: a stop at the last step of epoch 0 resumes from (0, 2)).
    @parameterized.parameters(
        (1, (0, 0)),
        (2, (0, 2)),
        (3, (0, 2)),
        (4, (0, 2)),
        (5, (1, 0)),
        (7, (1, 2)),
        (10, (2, 2)),
        (11, (2, 2)),
    )
    def test_interrupted_run_ends_where_an_uninterrupted_one_ends(
        self, interrupt_after, position
    ):
        backup_dir = self.create_tempdir().full_path
        with self.assertRaises(KeyboardInterrupt):
            self.train(backup_dir, interrupt_after=interrupt_after)
        self.assertEqual(ResumableBackup(backup_dir).position(), position)
        model, history = self.train(backup_dir)
        self.assert_weights_expected(model)
        # Each epoch's metrics cover the whole epoch, restart or not.
        self.assertEqual(sorted(history), ["loss", "mae"])
        self.assertAllClose(history, self.expected_history, rtol=1e-6)

    def test_backup_fit_leaves_keras_nothing_to_warn_about(self):
        backup_dir = self.create_tempdir().full_path
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            with self.assertRaises(KeyboardInterrupt):
                self.train(backup_dir, interrupt_after=3)
            self.train(backup_dir)  # the rest of epoch 0, then the others

    def test_model_fit_resumes_at_epoch_ends(self):
        backup_dir = self.create_tempdir().full_path

        def fit(callbacks=()):
            model = make_model()
            backup = ResumableBackup(backup_dir)
            model.fit(
                backup.training_data(self.epoch_batches),
                shuffle=False,
                epochs=_EPOCHS,
                callbacks=[backup, *callbacks],
                verbose=0,
            )
            return model

        with self.assertRaises(KeyboardInterrupt):
            fit([Interrupt(6)])
        self.assertEqual(ResumableBackup(backup_dir).position(), (1, 0))
        self.assert_weights_expected(fit())

    def test_a_finished_run_trains_no_further(self):
        backup_dir = self.create_tempdir().full_path
        self.train(backup_dir)
        self.assertEqual(ResumableBackup(backup_dir).position(), (_EPOCHS, 0))
        model, history = self.train(backup_dir)
        self.assert_weights_expected(model)
        self.assertLen(history["loss"], _EPOCHS)

    def test_a_backup_cut_short_is_not_loaded(self):
        backup_dir = self.create_tempdir().full_path
        with self.assertRaises(KeyboardInterrupt):
            self.train(backup_dir, interrupt_after=5)
        self.assertEqual(ResumableBackup(backup_dir).position(), (1, 0))
        # What kills during a write leave: a folder still being written,
        # and (not from this class, which renames a folder only once it
        # is complete) a named folder without its state.
        os.makedirs(os.path.join(backup_dir, ".partial-epoch-000001-step-2"))
        with open(os.path.join(backup_dir, "latest"), "w") as file:
            file.write("epoch-000001-step-000000002")
        os.makedirs(os.path.join(backup_dir, "epoch-000001-step-000000002"))
        self.assertEqual(ResumableBackup(backup_dir).position(), (1, 0))
        model, _ = self.train(backup_dir)
        self.assert_weights_expected(model)
        self.assertFalse(
            any(name.startswith(".partial") for name in os.listdir(backup_dir))
        )

    def test_keeps_the_newest_backups(self):
        backup_dir = self.create_tempdir().full_path
        self.train(backup_dir)
        names = sorted(
            name for name in os.listdir(backup_dir) if name != "latest"
        )
        self.assertEqual(
            names,
            ["epoch-000002-step-000000002", "epoch-000003-step-000000000"],
        )

    def test_a_backup_of_another_model_is_refused(self):
        backup_dir = self.create_tempdir().full_path
        self.train(backup_dir)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile("adam", "mse")
        with self.assertRaisesRegex(ValueError, "does not fit this model"):
            ResumableBackup(backup_dir).fit(
                model, self.epoch_batches, _EPOCHS + 1
            )

    def test_a_backup_of_another_optimizer_is_refused(self):
        # The same layers with another optimizer: Keras alone would load
        # the weights, warn, and go on with a fresh optimizer state.
        backup_dir = self.create_tempdir().full_path
        self.train(backup_dir)
        model = make_model()
        model.compile(keras.optimizers.SGD(0.05, momentum=0.9), "mse")
        with self.assertRaisesRegex(ValueError, "does not fit this model"):
            ResumableBackup(backup_dir).fit(
                model, self.epoch_batches, _EPOCHS + 1
            )

    def test_bad_arguments_are_refused(self):
        for arguments, message in (
            ({"backup_dir": ""}, "backup_dir"),
            ({"backup_dir": "b", "save_freq": 0}, "save_freq"),
            ({"backup_dir": "b", "save_freq": "batch"}, "save_freq"),
            ({"backup_dir": "b", "keep": 0}, "keep"),
        ):
            with self.assertRaisesRegex(ValueError, message):
                ResumableBackup(**arguments)

    def test_steps_between_backups_need_backup_fit(self):
        backup = ResumableBackup(self.create_tempdir().full_path, 2)
        with self.assertRaisesRegex(ValueError, "backup.fit"):
            make_model().fit(
                backup.training_data(self.epoch_batches),
                shuffle=False,
                epochs=1,
                callbacks=[backup],
                verbose=0,
            )


@unittest.skipUnless(TENSORFLOW_INSTALLED, "tf.data needs TensorFlow.")
class TfDataBackupTest(PyDatasetBackupTest):
    epoch_batches = staticmethod(tf_data_epoch_batches)

    def test_steps_between_backups_need_epochs_of_known_length(self):
        backup = ResumableBackup(self.create_tempdir().full_path, 2)
        with self.assertRaisesRegex(ValueError, "unknown cardinality"):
            backup.fit(
                make_model(),
                lambda epoch: self.epoch_batches(epoch).filter(lambda *_: True),
                _EPOCHS,
            )
