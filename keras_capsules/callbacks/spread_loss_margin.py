"""The spread-loss margin schedule of Hinton, Sabour, Frosst (2018)."""

import keras

from keras_capsules.callbacks.training_step import optimizer_step


class SpreadLossMargin(keras.callbacks.Callback):
    """Raises a `SpreadLoss` margin linearly from `start` to `end` over
    `total_steps` optimizer steps (the paper: 0.2 to 0.9 during training),
    then holds it. Reads the optimizer's step count before each batch, so a
    run resumed from a backup continues the schedule where it stopped.

    Args:
        loss: the `losses.SpreadLoss` given to `compile`.
        total_steps: int, steps until the margin reaches `end`.
        start: float. Defaults to `0.2`.
        end: float. Defaults to `0.9`.
    """

    def __init__(self, loss, total_steps, start=0.2, end=0.9):
        super().__init__()
        if not hasattr(loss, "margin"):
            raise ValueError(
                "`SpreadLossMargin` expects a loss with a `margin` variable, "
                f"such as `losses.SpreadLoss`. Received: {loss!r}."
            )
        if total_steps < 1:
            raise ValueError(
                "`SpreadLossMargin` expects `total_steps` >= 1. Received: "
                f"{total_steps!r}."
            )
        self.loss = loss
        self.total_steps = int(total_steps)
        self.start = float(start)
        self.end = float(end)

    def margin_at(self, step):
        """The margin after `step` optimizer steps."""
        progress = min(step / self.total_steps, 1.0)
        return self.start + (self.end - self.start) * progress

    def on_train_batch_begin(self, batch, logs=None):
        self.loss.margin.assign(self.margin_at(optimizer_step(self.model)))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["spread_margin"] = self.margin_at(optimizer_step(self.model))
