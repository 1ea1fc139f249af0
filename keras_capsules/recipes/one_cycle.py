"""The one-cycle policy of Heinsen (2019, sec. 4.2): a linear rise over the
first part of training, then a cosine return to the start."""

import math

import keras
from keras import ops

from keras_capsules.ops.arguments import positive_int
from keras_capsules.recipes.radam import RAdam

# RAdam's `beta_1` on the cycle, `(start, low point)`. The author's code
# (glassroom/heinsen_routing's `SingleCycleScheduler`, which produced the
# paper's numbers) starts at the optimizer's 0.9 and goes down to
# 0.9 x 0.9; the paper's text says 0.999 down to 0.9 x 0.999.
AUTHOR_BETA_1 = (0.9, 0.81)
PAPER_TEXT_BETA_1 = (0.999, 0.9 * 0.999)


@keras.saving.register_keras_serializable(package="keras_capsules")
class OneCycle(keras.optimizers.schedules.LearningRateSchedule):
    """A value that goes linearly from `start` to `peak` over the first
    `warmup_fraction` of `total_steps`, then back to `start` along a
    half cosine; it stays at `start` after `total_steps`.

    Heinsen (2019) schedules the learning rate (1e-5 -> 5e-4) and Adam's
    `beta_1` this way, over 10% of the steps (`beta_1` 0.9 -> 0.81 in his
    code, 0.999 -> 0.8991 in the paper's text). Use it as a learning
    rate, or as `RAdam`'s `beta_1`.

    Args:
        total_steps: int, optimizer steps of the whole run.
        start: float, the value at steps 0 and `total_steps`.
        peak: float, the value at the end of the rise.
        warmup_fraction: float in (0, 1), share of the steps spent rising.
            Defaults to 0.1.

    Examples:

        >>> schedule = OneCycle(total_steps=100, start=1e-5, peak=5e-4)
        >>> [round(float(schedule(step)), 6) for step in (0, 10, 100)]
        [1e-05, 0.0005, 1e-05]
    """

    def __init__(self, total_steps, start, peak, warmup_fraction=0.1):
        self.total_steps = positive_int("OneCycle", "total_steps", total_steps)
        if not 0.0 < warmup_fraction < 1.0:
            raise ValueError(
                "`OneCycle` expects `warmup_fraction` in (0, 1). Received: "
                f"warmup_fraction={warmup_fraction!r}."
            )
        self.start = float(start)
        self.peak = float(peak)
        self.warmup_fraction = float(warmup_fraction)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = max(self.warmup_fraction * self.total_steps, 1.0)
        decay = max(self.total_steps - warmup, 1.0)
        rising = self.start + (self.peak - self.start) * step / warmup
        progress = ops.clip((step - warmup) / decay, 0.0, 1.0)
        falling = self.start + (self.peak - self.start) * 0.5 * (
            1.0 + ops.cos(math.pi * progress)
        )
        return ops.where(step < warmup, rising, falling)

    def get_config(self):
        return {
            "total_steps": self.total_steps,
            "start": self.start,
            "peak": self.peak,
            "warmup_fraction": self.warmup_fraction,
        }


def one_cycle_radam(
    total_steps,
    learning_rate=(1e-5, 5e-4),
    beta_1=AUTHOR_BETA_1,
    warmup_fraction=0.1,
    **kwargs,
):
    """Returns `RAdam` with the learning rate and `beta_1` on one cycle, as
    Heinsen (2019) trains both of his models.

    Args:
        total_steps: int, optimizer steps of the whole run (epochs x steps
            per epoch).
        learning_rate: `(start, peak)`. Defaults to `(1e-5, 5e-4)`.
        beta_1: `(start, low point)`. Defaults to `AUTHOR_BETA_1`, `(0.9,
            0.81)`, as the author's code; `PAPER_TEXT_BETA_1` is `(0.999,
            0.8991)`, as the paper's text.
        warmup_fraction: float, share of the steps spent rising.
        **kwargs: further `RAdam` arguments.

    Examples:

        >>> optimizer = one_cycle_radam(total_steps=1000)
        >>> round(float(optimizer.learning_rate), 6)  # before the first step
        1e-05
    """
    return RAdam(
        learning_rate=OneCycle(total_steps, *learning_rate, warmup_fraction),
        beta_1=OneCycle(total_steps, *beta_1, warmup_fraction),
        **kwargs,
    )
