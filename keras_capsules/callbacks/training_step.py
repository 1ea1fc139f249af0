"""The optimizer's step count: what schedules read, so that a resumed run
continues its schedules where it stopped."""

from keras import ops


def optimizer_step(model):
    """The number of optimizer steps taken so far, as an int."""
    return int(ops.convert_to_numpy(model.optimizer.iterations))
