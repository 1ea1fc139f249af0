"""Spread-loss margin schedules of Hinton, Sabour, Frosst (2018): the
paper's linear rise over a run, and the official code's sigmoid of the
absolute step."""

import math

import keras

from keras_capsules.callbacks.training_step import optimizer_step
from keras_capsules.ops.arguments import positive_int, positive_number


class _MarginSchedule(keras.callbacks.Callback):
    """Sets a `SpreadLoss` margin from the optimizer's step count before
    each batch, so a run resumed from a backup continues the schedule.

    The model tracks the margin as a metric (`_MarginMetric`, logged as
    `spread_margin`): Keras carries the variables of a model's metrics
    into its compiled steps on every backend, where a variable of the
    loss alone would be read once, when JAX traces the step, and keep
    that value."""

    def __init__(self, loss):
        super().__init__()
        if not hasattr(loss, "margin"):
            raise ValueError(
                f"`{type(self).__name__}` expects a loss with a `margin` "
                f"variable, such as `losses.SpreadLoss`. Received: {loss!r}."
            )
        self.loss = loss
        self.metric = _MarginMetric(loss.margin)

    def set_model(self, model):
        super().set_model(model)
        if not any(metric is self.metric for metric in model.metrics):
            model._spread_loss_margin = self.metric

    def margin_at(self, step):
        """The margin after `step` optimizer steps."""
        raise NotImplementedError

    def on_train_batch_begin(self, batch, logs=None):
        self.loss.margin.assign(self.margin_at(optimizer_step(self.model)))


class _MarginMetric(keras.metrics.Metric):
    """A `SpreadLoss` margin as a metric of the model (`spread_margin`):
    its value, never reset, and never added to on a restore
    (`ResumableBackup` adds up the sums other metrics keep)."""

    # Read by `ResumableBackup`: this state is a value, not a sum.
    additive_state = False

    def __init__(self, margin):
        super().__init__(name="spread_margin")
        self.margin = margin

    def update_state(self, *args, **kwargs):
        pass

    def result(self):
        # A copy: on JAX the variable's buffer is handed to the next
        # compiled step (validation's too), which deletes this one.
        return keras.ops.copy(keras.ops.convert_to_tensor(self.margin))

    def reset_state(self):
        pass


class SpreadLossMargin(_MarginSchedule):
    """Raises a `SpreadLoss` margin linearly from `start` to `end` over
    `total_steps` optimizer steps (the paper: 0.2 to 0.9 during training),
    then holds it. The schedule follows the fraction of the run, so a
    shorter run reaches 0.9 sooner.

    Args:
        loss: the `losses.SpreadLoss` given to `compile`.
        total_steps: int, steps until the margin reaches `end`.
        start: float. Defaults to `0.2`.
        end: float. Defaults to `0.9`.

    Examples:

        >>> from keras_capsules.losses import SpreadLoss
        >>> loss = SpreadLoss()
        >>> schedule = SpreadLossMargin(loss, total_steps=100)
        >>> [round(schedule.margin_at(step), 2) for step in (0, 50, 100, 200)]
        [0.2, 0.55, 0.9, 0.9]
    """

    def __init__(self, loss, total_steps, start=0.2, end=0.9):
        super().__init__(loss)
        self.total_steps = positive_int(
            "SpreadLossMargin", "total_steps", total_steps
        )
        self.start = float(start)
        self.end = float(end)

    def margin_at(self, step):
        progress = min(step / self.total_steps, 1.0)
        return self.start + (self.end - self.start) * progress


class SigmoidSpreadLossMargin(_MarginSchedule):
    """The official code's margin, a sigmoid of the absolute step:
    `start + rise * sigmoid(min(cap, step / steps_per_unit - offset))`,
    0.214 at step 0, 0.237 at 50,000 and 0.6 at 200,000 with the defaults.
    The same step gives the same margin whatever the length of the run.

    Args:
        loss: the `losses.SpreadLoss` given to `compile`.
        start: float. Defaults to `0.2`.
        rise: float, what the margin gains at most. Defaults to `0.79`.
        steps_per_unit: float, steps per unit of the sigmoid's argument.
            Defaults to `50_000`.
        offset: float. Defaults to `4.0`.
        cap: float, the largest argument of the sigmoid. Defaults to
            `10.0`.

    Examples:

        >>> from keras_capsules.losses import SpreadLoss
        >>> schedule = SigmoidSpreadLossMargin(SpreadLoss())
        >>> [round(schedule.margin_at(step), 3) for step in (0, 50_000,
        ...  200_000)]
        [0.214, 0.237, 0.595]
    """

    def __init__(
        self,
        loss,
        start=0.2,
        rise=0.79,
        steps_per_unit=50_000,
        offset=4.0,
        cap=10.0,
    ):
        super().__init__(loss)
        positive_number(
            "SigmoidSpreadLossMargin", "steps_per_unit", steps_per_unit
        )
        self.start = float(start)
        self.rise = float(rise)
        self.steps_per_unit = float(steps_per_unit)
        self.offset = float(offset)
        self.cap = float(cap)

    def margin_at(self, step):
        argument = min(self.cap, step / self.steps_per_unit - self.offset)
        return self.start + self.rise / (1.0 + math.exp(-argument))
