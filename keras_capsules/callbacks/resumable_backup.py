"""A backup of the training state that a kill at any moment leaves
usable, and the training data that resumes with it at the exact batch."""

import shutil
import tempfile
import warnings

import keras

from keras_capsules import private_apis
from keras_capsules.callbacks.backup_folder import (
    BackupFolder,
    metric_variables,
)
from keras_capsules.callbacks.distributed_training import (
    build_optimizer,
    writes_shared_files,
)
from keras_capsules.callbacks.epoch_data import EpochData
from keras_capsules.ops.arguments import positive_int


class ResumableBackup(keras.callbacks.Callback):
    """Backs up the model, its optimizer and the position in training, so
    that a run killed at any moment resumes where its last backup was and
    ends where an uninterrupted run ends.

    Every backup is a folder of `backup_dir` named after its position,
    `epoch-000002-step-000000040`, holding the weights with the
    optimizer's state, the states of the model's seed generators, the
    epoch's metric states and `state.json` (epochs and steps done, `fit`'s
    history so far). It is written under a temporary name and renamed
    when complete, then the file `latest` is replaced by one naming it:
    a kill, even during a write, leaves the previous backup whole and
    named. The `keep` newest backups are kept. At the start of `fit` the
    latest backup is loaded and training continues from its epoch (a
    finished run's backup says every epoch is done: re-running the same
    command trains no further).

    A backup is written at the end of every epoch and, with an integer
    `save_freq`, every `save_freq` steps within one. Train with
    `backup.fit(model, epoch_batches, epochs)`: it takes the training data
    as a function of the epoch number, so that a restarted process sees
    the order (and augmentation) the interrupted one would have seen,
    when that function's randomness comes from the epoch alone, and it
    resumes in the middle of an epoch by fitting the rest of that epoch
    first. (`model.fit(backup.training_data(epoch_batches), ...,
    callbacks=[backup])` resumes at epoch ends only.)

    In a multi-worker run the chief writes the backups; every worker
    reads them, so `backup_dir` must be on storage all workers share.

    Args:
        backup_dir: str, the folder of the backups.
        save_freq: `"epoch"` or int, steps between backups within an
            epoch. Defaults to `"epoch"`.
        keep: int >= 1, backups kept. Defaults to `2`.

    Examples:

        >>> import tempfile
        >>> from keras_capsules import datasets
        >>> images = np.random.default_rng(0).uniform(size=(64, 4))
        >>> labels = np.zeros((64, 1))
        >>> # Each epoch's order drawn from the seed and the epoch number.
        >>> epoch_batches = datasets.array_epoch_batches(
        ...     (images, labels), batch_size=16, seed=0)
        >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> backup = ResumableBackup(tempfile.mkdtemp(), save_freq=2)
        >>> history = backup.fit(model, epoch_batches, epochs=2, verbose=0)
        >>> len(history["loss"])
        2
    """

    def __init__(self, backup_dir, save_freq="epoch", keep=2):
        super().__init__()
        if not backup_dir:
            raise ValueError(
                "`ResumableBackup` expects `backup_dir`, a folder for the "
                f"backups. Received: backup_dir={backup_dir!r}."
            )
        if save_freq != "epoch":
            save_freq = positive_int("ResumableBackup", "save_freq", save_freq)
        self.backup_dir = backup_dir
        self.save_freq = save_freq
        self.keep = positive_int("ResumableBackup", "keep", keep)
        self._folder = BackupFolder(backup_dir, self.keep)
        self._data = None  # The `EpochData` being fitted.
        self._resuming_within_epochs = False
        self._model_is_current = False
        self._metric_states = None
        self.history = {}
        self._current_epoch = 0
        self._first_step = 0  # Of the current epoch: > 0 after a restore.
        self._last_saved_step = 0

    def training_data(self, epoch_batches):
        """Data for `fit` whose epoch `e` gives `epoch_batches(e)`.

        Args:
            epoch_batches: a function of the epoch number that returns the
                epoch's batches: a `keras.utils.PyDataset` (any backend;
                given an int, e.g. `datasets.array_epoch_batches`) or a
                `tf.data.Dataset` (TensorFlow installed; given an int64
                scalar tensor). Its order and any random augmentation
                should come from that number (a permutation and random
                draws seeded with it), so that a resumed run repeats
                them. Every epoch must have as many batches as epoch 0.

        Returns:
            A `keras.utils.PyDataset` or a `tf.data.Dataset` of batches.
        """
        return self._epoch_data(epoch_batches).continuing()

    def fit(self, model, epoch_batches, epochs, callbacks=(), **kwargs):
        """Trains `model` for `epochs` epochs from the latest backup.

        Resuming in the middle of an epoch fits the rest of that epoch
        (its batches after the backup's) first, then the following epochs.

        Args:
            model: a compiled, built `keras.Model`.
            epoch_batches: as for `training_data`.
            epochs: int, the epochs of the whole run.
            callbacks: further callbacks (this backup is added first).
            **kwargs: further arguments of `model.fit` (not `x`, `epochs`,
                `initial_epoch`).

        Returns:
            `{metric: [value per epoch]}` of the whole run, the epochs
            before the restart included.
        """
        epochs = positive_int("ResumableBackup.fit", "epochs", epochs)
        data = self._epoch_data(epoch_batches)
        epoch, step = self.position()
        if epoch >= epochs:  # Nothing left: the model as the run ended.
            self._restore(model)
            return self.history
        callbacks = [self, *callbacks]
        # The epochs come ordered by `epoch_batches`; Keras's default
        # `shuffle=True` would reorder a PyDataset's batches.
        kwargs = {"shuffle": False, **kwargs}
        self._resuming_within_epochs = True
        try:
            if step:  # The rest of the interrupted epoch.
                model.fit(
                    data.of_epoch(epoch, skip=step),
                    epochs=epoch + 1,
                    initial_epoch=epoch,
                    callbacks=callbacks,
                    **kwargs,
                )
                epoch += 1
                # The model holds the epoch's end: no worker reloads it
                # (another's may not have been written yet).
                self._model_is_current = True
            if epoch < epochs:
                model.fit(
                    data.continuing(),
                    epochs=epochs,
                    initial_epoch=epoch,
                    callbacks=callbacks,
                    **kwargs,
                )
        finally:
            self._resuming_within_epochs = False
            self._model_is_current = False
        return self.history

    def _epoch_data(self, epoch_batches):
        """The `EpochData` of `epoch_batches`, which this backup's epochs
        now advance; a ValueError where backups within epochs need the
        number of batches and it is unknown."""
        data = EpochData(epoch_batches)
        if self.save_freq != "epoch" and data.length < 0:
            raise ValueError(
                f"`ResumableBackup` with save_freq={self.save_freq} needs "
                "epochs of a known number of batches. Received "
                "`epoch_batches(0)` of unknown cardinality. Make it known "
                "(`tf.data.experimental.assert_cardinality`) or use "
                "save_freq='epoch'."
            )
        self._data = data
        return data

    def position(self):
        """`(epochs, steps)` of the latest backup: `epochs` complete epochs
        and `steps` steps of the next; `(0, 0)` without a backup."""
        state = self._folder.latest_state()
        return (state["epoch"], state["step"]) if state else (0, 0)

    def on_train_begin(self, logs=None):
        if self.save_freq != "epoch" and not self._resuming_within_epochs:
            raise ValueError(
                "`ResumableBackup` with save_freq="
                f"{self.save_freq!r} resumes within an epoch, which "
                "`model.fit` cannot. Received a `model.fit` call. Train "
                "with `backup.fit(model, epoch_batches, epochs)`, or use "
                "save_freq='epoch'."
            )
        self._first_step = self._last_saved_step = 0
        if self._model_is_current:
            self._model_is_current = False
            return
        epoch, step = self._restore()
        # What Keras's own BackupAndRestore sets: fit starts there.
        private_apis.set_initial_epoch(self.model, epoch)
        self._first_step = self._last_saved_step = step

    def _restore(self, model=None):
        """Loads the latest backup into the model; returns its `(epochs,
        steps)` (`(0, 0)` and nothing loaded without one)."""
        model = model or self.model
        self._metric_states = None
        name = self._folder.latest()
        if name is None:
            self.history = {}
            return 0, 0
        if not model.built:
            raise ValueError(
                "`ResumableBackup` restores weights into a built model. "
                "Received an unbuilt model: build it (call it on a batch) "
                "before training."
            )
        build_optimizer(model)  # so its state loads too
        state, self._metric_states = self._folder.read(name, model)
        self.history = state["history"]
        return state["epoch"], state["step"]

    def on_epoch_begin(self, epoch, logs=None):
        if self._data is not None:
            self._data.set_epoch(epoch)
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._metric_states is not None:
            self._add_backup_metrics()
        if self.save_freq == "epoch":
            return
        steps = self._first_step + batch + 1  # Done in this epoch.
        # After the last batch, the epoch's own backup follows (after its
        # validation), so that a backup always has batches left.
        if (
            steps - self._last_saved_step >= self.save_freq
            and steps < self._data.length
        ):
            self._save(self._current_epoch, steps)

    def _add_backup_metrics(self):
        """Adds the backup's metric states to those of the first batch
        after a restore (Keras builds some metrics only in that batch), so
        that the resumed epoch's metrics cover the whole epoch. Keras's
        metrics keep sums (totals, counts), which add."""
        states, self._metric_states = self._metric_states, None
        variables = metric_variables(self.model)
        try:
            if len(variables) != len(states):
                raise ValueError(
                    f"{len(states)} saved metric states, {len(variables)} "
                    "metric variables"
                )
            for variable, state in zip(variables, states):
                variable.assign_add(keras.ops.cast(state, variable.dtype))
        except (ValueError, RuntimeError) as error:
            warnings.warn(
                "`ResumableBackup`: the metrics of the resumed epoch cover "
                f"only its steps after the restart ({error}).",
                stacklevel=2,
            )

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        self._first_step = 0
        self._save(epoch + 1, 0)

    def on_train_end(self, logs=None):
        private_apis.set_initial_epoch(self.model, None)

    def _save(self, epoch, step):
        self._last_saved_step = step
        state = {"epoch": epoch, "step": step, "history": self.history}
        if writes_shared_files(self.model):
            self._folder.write(self.model, state)
        else:
            # Every worker reads the same (possibly synchronised)
            # variables in the same order; only the chief keeps them.
            scratch = tempfile.mkdtemp(prefix="resumable_backup_")
            try:
                self._folder.write(self.model, state, scratch)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
