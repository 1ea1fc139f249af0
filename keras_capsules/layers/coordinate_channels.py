"""Coordinate channels: where each pixel is, as two more input channels
(Heinsen 2019, sec. 4.1.1 and Fig. 3b)."""

import keras
from keras import ops

from keras_capsules.layers import validation


@keras.saving.register_keras_serializable(package="keras_capsules")
class CoordinateChannels(keras.layers.Layer):
    """Appends the vertical and horizontal pixel coordinates, each evenly
    spaced from -1 to 1, as two channels.

    Routing that shares its weights across positions sees no position;
    these channels let the convolutions below it write the position into
    the capsules. Works for any image size, from call to call.

    Call arguments:
        inputs: `(batch, H, W, C)` images or feature maps.

    Returns:
        `(batch, H, W, C + 2)`: the inputs, then the row coordinate, then
        the column coordinate.

    Examples:

        >>> tuple(CoordinateChannels()(np.zeros((2, 28, 28, 1))).shape)
        (2, 28, 28, 3)
    """

    def build(self, input_shape):
        validation.image_shape(self, input_shape)

    def call(self, inputs):
        inputs = ops.cast(inputs, self.compute_dtype)
        shape = ops.shape(inputs)
        rows = _evenly_spaced(shape[1])
        columns = _evenly_spaced(shape[2])
        grid = ops.stack(
            [
                ops.broadcast_to(rows[:, None], (shape[1], shape[2])),
                ops.broadcast_to(columns[None, :], (shape[1], shape[2])),
            ],
            axis=-1,
        )
        grid = ops.broadcast_to(
            ops.cast(grid, self.compute_dtype)[None],
            (shape[0], shape[1], shape[2], 2),
        )
        return ops.concatenate([inputs, grid], axis=-1)

    def compute_output_shape(self, input_shape):
        *leading, channels = input_shape
        return (*leading, channels + 2)


def _evenly_spaced(count):
    """`count` values from -1 to 1 (`[-1]` for one), for a count known only
    when the graph runs."""
    steps = ops.cast(ops.arange(count), "float32")
    last = ops.cast(ops.maximum(count - 1, 1), "float32")
    return 2.0 * steps / last - 1.0
