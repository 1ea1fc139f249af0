"""The folder of `ResumableBackup`'s backups: each backup written under a
temporary name and renamed when complete, a pointer to the latest, and
the oldest pruned, so that a kill at any moment leaves the previous
backup whole and named."""

import json
import os
import shutil
import warnings

import keras
import numpy as np

_POINTER = "latest"
_WEIGHTS = "state.weights.h5"
_STATE = "state.json"
_METRICS = "metrics.npz"
_RANDOM = "random_states.npz"
_PARTIAL = ".partial-"


class BackupFolder:
    """The backups in `path`, the `keep` newest of them kept.

    A backup is a folder named after its position,
    `epoch-000002-step-000000040`, holding the model's weights with the
    optimizer's state, the states of its seed generators, the epoch's
    metric states (within an epoch) and `state.json` (`epoch`, `step`,
    `history`).
    """

    def __init__(self, path, keep):
        self.path = path
        self.keep = keep

    def latest(self):
        """The folder name of the latest complete backup, or None."""
        try:
            with open(os.path.join(self.path, _POINTER)) as file:
                name = file.read().strip()
            if os.path.isfile(os.path.join(self.path, name, _STATE)):
                return name
        except FileNotFoundError:
            pass
        names = self.names()
        return names[-1] if names else None

    def latest_state(self):
        """The `state.json` of the latest backup, or None."""
        name = self.latest()
        if name is None:
            return None
        with open(os.path.join(self.path, name, _STATE)) as file:
            return json.load(file)

    def names(self):
        """Complete backups, oldest first (their names sort by position)."""
        if not os.path.isdir(self.path):
            return []
        return sorted(
            name
            for name in os.listdir(self.path)
            if name.startswith("epoch-")
            and os.path.isfile(os.path.join(self.path, name, _STATE))
        )

    def read(self, name, model):
        """Loads backup `name` into the built `model` (its optimizer built
        too); returns `(state, metric states or None)`."""
        folder = os.path.join(self.path, name)
        try:
            with warnings.catch_warnings():
                # Keras only warns when the optimizer's state does not fit
                # (another optimizer, say) and goes on without it.
                warnings.filterwarnings(
                    "error", "Skipping variable loading", UserWarning
                )
                model.load_weights(os.path.join(folder, _WEIGHTS))
        except (ValueError, UserWarning) as error:
            raise ValueError(
                f"`ResumableBackup` found a backup in {folder} that does "
                f"not fit this model ({error}). A backup resumes the run "
                "that wrote it: give a run of another model its own "
                "folder, or delete this one to start afresh."
            ) from error
        with np.load(os.path.join(folder, _RANDOM)) as random_states:
            for k, variable in enumerate(random_state_variables(model)):
                variable.assign(random_states[f"arr_{k}"])
        with open(os.path.join(folder, _STATE)) as file:
            state = json.load(file)
        metric_states = None
        if state["step"]:
            with np.load(os.path.join(folder, _METRICS)) as metrics:
                metric_states = [
                    metrics[f"arr_{k}"] for k in range(len(metrics.files))
                ]
        return state, metric_states

    def write(self, model, state, folder=None):
        """Writes the backup of `model` at `state` (`epoch`, `step`,
        `history`); into `folder` instead (a scratch folder, nothing
        kept) when given."""
        name = f"epoch-{state['epoch']:06d}-step-{state['step']:09d}"
        base = folder or self.path
        partial = os.path.join(base, f"{_PARTIAL}{name}")
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        model.save_weights(os.path.join(partial, _WEIGHTS))
        np.savez(
            os.path.join(partial, _RANDOM),
            *(
                keras.ops.convert_to_numpy(variable)
                for variable in random_state_variables(model)
            ),
        )
        if state["step"]:  # The epoch's metrics so far.
            np.savez(
                os.path.join(partial, _METRICS),
                *(
                    keras.ops.convert_to_numpy(variable)
                    for variable in metric_variables(model)
                ),
            )
        with open(os.path.join(partial, _STATE), "w") as file:
            json.dump(state, file)
        if folder is not None:
            return
        _sync(partial)
        if os.path.exists(os.path.join(self.path, name)):
            self._discard(name)  # The same position, saved again.
        os.rename(partial, os.path.join(self.path, name))
        pointer = os.path.join(self.path, f"{_PARTIAL}{_POINTER}")
        with open(pointer, "w") as file:
            file.write(name)
        _sync(pointer)
        os.replace(pointer, os.path.join(self.path, _POINTER))
        self._prune()

    def _prune(self):
        """Removes all but the `keep` newest backups and any partial one
        a killed run left."""
        for name in self.names()[: -self.keep]:
            self._discard(name)
        for name in os.listdir(self.path):
            path = os.path.join(self.path, name)
            if name.startswith(_PARTIAL) and os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)

    def _discard(self, name):
        """Removes a backup: renamed to a partial name first, so that a
        kill during the removal leaves no named backup without its
        files."""
        doomed = os.path.join(self.path, f"{_PARTIAL}old-{name}")
        shutil.rmtree(doomed, ignore_errors=True)
        os.rename(os.path.join(self.path, name), doomed)
        shutil.rmtree(doomed)


def random_state_variables(model):
    """The states of the model's seed generators (e.g. of dropout and
    mixup), which its weights file leaves out: `model.variables` beyond
    `model.weights`."""
    weights = {id(weight) for weight in model.weights}
    return [
        variable for variable in model.variables if id(variable) not in weights
    ]


def metric_variables(model):
    """The state variables of the model's metrics that keep sums (all of
    Keras's; not a metric whose `additive_state` is False), in a fixed
    order."""
    return [
        variable
        for metric in model.metrics
        if getattr(metric, "additive_state", True)
        for variable in metric.variables
    ]


def _sync(path):
    """Flushes a file, or every file of a folder, to disk (a backup then
    survives a machine's crash too, not only its process's)."""
    paths = (
        [os.path.join(path, name) for name in os.listdir(path)]
        if os.path.isdir(path)
        else [path]
    )
    for file_path in paths:
        with open(file_path, "rb") as file:
            os.fsync(file.fileno())
