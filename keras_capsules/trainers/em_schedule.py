"""The schedule of capsule regression's EM training (Saul, section 3.1):
the rounds of thresholded EM, their thresholds and patience, and the
momentum. One frozen object; its defaults are the paper's protocol."""

import dataclasses
import numbers

import numpy as np

from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.settings import Settings

PAPER_THRESHOLDS = (0.8, 0.6, 0.4, 0.2, 0.0)
PAPER_PATIENCE = (128, 64, 32, 16, 8)


@dataclasses.dataclass(frozen=True)
class EMSchedule(Settings):
    """How `CapsuleRegressionEM` iterates.

    Args:
        momentum: float in [0, 1), gamma of eq. 27 (the paper's 0.9).
        thresholds: the thresholds nu of eq. 26, one per round (the
            paper's 0.8, 0.6, 0.4, 0.2, 0).
        patience: ints, one per round: a round ends when the validation
            error has not improved for this many iterations (the paper's
            128, 64, 32, 16, 8).
        max_iterations: optional int, a cap on all iterations together.

    Each round starts from the best model of the round before.

    Examples:

        >>> EMSchedule().num_rounds
        5
        >>> EMSchedule(thresholds=(0.5, 0.0), patience=(4, 2)).thresholds_at(
        ...     np.array([0, 1, 2]))
        array([0.5, 0. , 0. ], dtype=float32)
    """

    KIND = "EM schedule"

    momentum: float = 0.9
    thresholds: tuple = PAPER_THRESHOLDS
    patience: tuple = PAPER_PATIENCE
    max_iterations: int | None = None

    def __post_init__(self):
        thresholds, patience = tuple(self.thresholds), tuple(self.patience)
        if len(thresholds) != len(patience) or not thresholds:
            raise ValueError(
                "`EMSchedule` expects `thresholds` and `patience` of one "
                "value per round: equal, non-zero lengths. Received: "
                f"{len(thresholds)} thresholds and {len(patience)} patience "
                "values."
            )
        if any(
            not (isinstance(nu, numbers.Real) and 0.0 <= nu <= 1.0)
            for nu in thresholds
        ):
            raise ValueError(
                "`EMSchedule` expects each threshold nu in [0, 1] (eq. 26). "
                f"Received: thresholds={thresholds}."
            )
        if not (
            isinstance(self.momentum, numbers.Real)
            and 0.0 <= self.momentum < 1.0
        ):
            raise ValueError(
                "`EMSchedule` expects `momentum` gamma in [0, 1) (eq. 27). "
                f"Received: momentum={self.momentum!r}."
            )
        patience = tuple(
            positive_int("EMSchedule", "patience", n) for n in patience
        )
        object.__setattr__(self, "thresholds", tuple(map(float, thresholds)))
        object.__setattr__(self, "patience", patience)
        object.__setattr__(self, "momentum", float(self.momentum))
        if self.max_iterations is not None:
            self._check_positive_ints("max_iterations")

    @property
    def num_rounds(self):
        return len(self.thresholds)

    def thresholds_at(self, rounds):
        """`(K,)` float32: each model's nu in its round `rounds` `(K,)` (a
        finished model keeps the last round's)."""
        return _per_round(self.thresholds, rounds).astype(np.float32)

    def patience_at(self, rounds):
        """`(K,)`: each model's patience in its round."""
        return _per_round(self.patience, rounds)


def _per_round(values, rounds):
    return np.array([values[min(r, len(values) - 1)] for r in rounds])


# The paper's protocol (section 3.1).
EMSchedule.PRESETS = {"paper": EMSchedule()}
