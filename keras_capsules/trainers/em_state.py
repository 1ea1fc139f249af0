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
