"""Where EM training stands: the state a checkpoint stores and resumes."""

import dataclasses
import json
import os

import numpy as np

HISTORY_KEYS = (
    "log_likelihood",
    "error",
    "validation_error",
    "round",
    "active_models",
)
# What a progress bar shows of each iteration.
PROGRESS_KEYS = ("log_likelihood", "error", "val_error", "round")


@dataclasses.dataclass
class EMState:
    """The kernels, momentum and early-stopping state of every model.

    Attributes:
        kernel: `(K, q, m, d)` current kernels W(t).
        previous: `(K, q, m, d)` kernels W(t - 1), for momentum (eq. 27).
        best_kernel: `(K, q, m, d)` each model's best kernels so far.
        best_error: `(K,)` their validation errors.
        since_best: `(K,)` iterations since each model last improved.
        rounds: `(K,)` each model's round; equal to the number of rounds
            once the model has finished.
        iteration: iterations done.
        history: per-iteration lists, keys `HISTORY_KEYS`.
    """

    kernel: np.ndarray
    previous: np.ndarray
    best_kernel: np.ndarray
    best_error: np.ndarray
    since_best: np.ndarray
    rounds: np.ndarray
    iteration: int
    history: dict

    @classmethod
    def start(cls, kernel):
        """The state before the first iteration, from initial kernels."""
        count = kernel.shape[0]
        return cls(
            kernel=kernel,
            previous=kernel.copy(),
            best_kernel=kernel.copy(),
            best_error=np.full(count, np.inf),
            since_best=np.zeros(count, int),
            rounds=np.zeros(count, int),
            iteration=0,
            history={key: [] for key in HISTORY_KEYS},
        )

    @classmethod
    def start_or_resume(cls, kernel, checkpoint_path=None):
        """The state saved at `checkpoint_path` if that file exists (its
        kernels must have `kernel`'s shape), else the state before the
        first iteration from `kernel`."""
        if not (checkpoint_path and os.path.exists(checkpoint_path)):
            return cls.start(kernel)
        state = cls.load(checkpoint_path)
        if state.kernel.shape != kernel.shape:
            raise ValueError(
                f"The checkpoint {checkpoint_path} holds kernels of shape "
                f"{state.kernel.shape}, but this trainer and data give "
                f"{kernel.shape}. Use a new checkpoint_path for a new "
                "configuration."
            )
        return state

    def finished(self, schedule):
        """Whether every model has done its rounds of `schedule`, or the
        schedule's `max_iterations` are done."""
        cap = schedule.max_iterations
        return not np.any(self.rounds < schedule.num_rounds) or bool(
            cap and self.iteration >= cap
        )

    def record(self, **values):
        """Appends one iteration's `values`, one per `HISTORY_KEYS`."""
        for key in HISTORY_KEYS:
            self.history[key].append(values[key])

    def progress(self):
        """`[(name, value)]` of the latest iteration (`PROGRESS_KEYS`)."""
        history = self.history
        values = (
            history["log_likelihood"][-1],
            history["error"][-1],
            history["validation_error"][-1],
            float(self.rounds.min()),
        )
        return list(zip(PROGRESS_KEYS, values))

    def advance(self, updated, model_error, schedule):
        """Takes one iteration's EM updates: each model still in a round
        keeps its best kernels by `model_error`, moves to `updated` plus
        momentum (eq. 27), and ends its round when it has not improved for
        the round's patience; a finished round restarts the next from the
        best kernels.

        Args:
            updated: `(K, q, m, d)` kernels of the M-step from `kernel`.
            model_error: `(K,)` each model's error at `kernel`.
            schedule: the `EMSchedule`.
        """
        active = self.rounds < schedule.num_rounds
        improved = active & (model_error < self.best_error)
        self.best_error = np.where(improved, model_error, self.best_error)
        self.best_kernel[improved] = self.kernel[improved]
        self.since_best = np.where(improved, 0, self.since_best + 1)
        patience = schedule.patience_at(self.rounds)
        round_over = active & (self.since_best >= patience)

        updated = updated + schedule.momentum * (self.kernel - self.previous)
        self.previous = self.kernel
        self.kernel = np.where(
            active[:, None, None, None], updated, self.kernel
        )
        restart = round_over[:, None, None, None]
        self.kernel = np.where(restart, self.best_kernel, self.kernel)
        self.previous = np.where(restart, self.best_kernel, self.previous)
        self.rounds = self.rounds + round_over
        self.since_best = np.where(round_over, 0, self.since_best)
        self.iteration += 1

    def save(self, path):
        """Writes the state to `path` (.npz) atomically."""
        arrays = {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if field.name not in ("iteration", "history")
        }
        temporary = f"{path}.tmp.npz"
        np.savez(
            temporary,
            iteration=self.iteration,
            history=json.dumps(self.history),
            **arrays,
        )
        os.replace(temporary, path)

    @classmethod
    def load(cls, path):
        """Reads a state written by `save`."""
        with np.load(path) as data:
            return cls(
                kernel=data["kernel"],
                previous=data["previous"],
                best_kernel=data["best_kernel"],
                best_error=data["best_error"],
                since_best=data["since_best"],
                rounds=data["rounds"],
                iteration=int(data["iteration"]),
                history=json.loads(str(data["history"])),
            )
