"""Class capsules routed by EM, with coordinate addition (Hinton, Sabour,
Frosst 2018, sec. 4)."""

import keras
import numpy as np
from keras import ops

from keras_capsules.layers import em_activation, validation
from keras_capsules.layers import inverse_temperatures as schedules
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops.em_routing import VARIANCE_FLOOR, em_routing


def coordinate_offsets(height, width, dtype):
    """`(H, W, 1, 1, 4, 4)`: the scaled row `(y + 0.5) / H` at entry
    `(0, 3)` and column `(x + 0.5) / W` at entry `(1, 3)` of each vote, the
    first two entries of its right-hand column; zero elsewhere."""
    rows = (ops.cast(ops.arange(height), dtype) + 0.5) / ops.cast(height, dtype)
    columns = (ops.cast(ops.arange(width), dtype) + 0.5) / ops.cast(
        width, dtype
    )
    row_entry = np.zeros((4, 4), "float32")
    row_entry[0, 3] = 1.0
    column_entry = np.zeros((4, 4), "float32")
    column_entry[1, 3] = 1.0
    offsets = rows[:, None, None, None, None, None] * ops.cast(
        row_entry, dtype
    ) + columns[None, :, None, None, None, None] * ops.cast(column_entry, dtype)
    return offsets


@keras.saving.register_keras_serializable(package="keras_capsules")
class MatrixCapsuleEMRouting(keras.layers.Layer):
    """Matrix capsules routed by EM to `num_capsules` capsules, e.g. one
    per class (the paper's Class Capsules).

    Each input capsule (pose `M_i`, activation `a_i`) votes `V_ij = M_i W`
    for each output capsule j, and `keras_capsules.ops.em_routing`
    (Procedure 1) turns votes and activations into output poses (the
    means) and activations. Two input forms:

    - a grid `(batch, H, W, D)`, as from `ConvMatrixCapsules`: one `W[t, j]`
      per capsule type t, shared across positions, so any grid size works.
      With `coordinate_addition` (the default) the scaled centre of each
      capsule's position, `((y + 0.5) / H, (x + 0.5) / W)`, is added to
      the first two entries of the right-hand column of its votes;
    - a list `(batch, n)`: one `W[i, j]` per input capsule; coordinate
      addition does not apply.

    `beta_u`, `beta_a` are learned per output capsule.

    Args:
        num_capsules: int, output capsules `n_out`.
        coordinate_addition: bool. Defaults to `True`.
        num_iterations: int >= 1, routing iterations. Defaults to `3`.
        inverse_temperatures: optional list of `num_iterations` floats; None
            for `inverse_temperatures.default_inverse_temperatures`. Held in
            a non-trainable weight (see `ConvMatrixCapsules`).
        activation_bias_gain, cost_normalization, variance_floor: how
            routing turns costs into activations, as for
            `ConvMatrixCapsules` (`"per_child"` counts every input capsule
            as a child). The defaults are the paper's.
        kernel_initializer: initializer of `W`. Defaults to a truncated
            normal of standard deviation 0.5.
        kernel_regularizer: optional regularizer of `W`.
        assignment_smoothing: float `eps` in `[0, 1)`: every M-step after
            the first weighs a child by `(1 - eps) R_ij + eps R0_ij`, where
            `R0` is its first, uniform assignment, so that no parent
            collapses onto a single child. Defaults to `0.0` (the paper).
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[activations, poses]`: `(batch, H, W, D)` and
            `(batch, H, W, D, 4, 4)`, or `(batch, n)` and `(batch, n, 4, 4)`.
        mask: optional bool mask of the activations' shape, True for input
            capsules that take part; a masked capsule changes no output.

    Returns:
        `[activations, poses]`: `(batch, n_out)` in `[0, 1]` and
        `(batch, n_out, 4, 4)`.

    Example:

    >>> layer = MatrixCapsuleEMRouting(10)
    >>> activations, poses = layer([np.ones((2, 3, 3, 8)),
    ...                             np.zeros((2, 3, 3, 8, 4, 4))])
    >>> activations.shape
    TensorShape([2, 10])
    """

    def __init__(
        self,
        num_capsules,
        coordinate_addition=True,
        num_iterations=3,
        inverse_temperatures=None,
        activation_bias_gain=1.0,
        cost_normalization="none",
        variance_floor=VARIANCE_FLOOR,
        kernel_initializer=None,
        kernel_regularizer=None,
        assignment_smoothing=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_capsules = num_capsules
        self.num_iterations = num_iterations
        validation.check_positive_ints(self, ["num_capsules", "num_iterations"])
        self.coordinate_addition = bool(coordinate_addition)
        self.inverse_temperatures = schedules.resolve(
            self, num_iterations, inverse_temperatures
        )
        em_activation.set_arguments(
            self,
            activation_bias_gain,
            cost_normalization,
            variance_floor,
            assignment_smoothing,
        )
        self.kernel_initializer = keras.initializers.get(
            kernel_initializer or keras.initializers.TruncatedNormal(stddev=0.5)
        )
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        grid = validation.matrix_capsule_shapes(self, input_shape)
        self.on_grid = len(grid) == 4
        self.kernel = self.add_weight(  # W[t, j] (grid) or W[i, j]: 4x4
            name="kernel",
            shape=(grid[-1], self.num_capsules, 4, 4),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.beta_u = self.add_weight(
            name="beta_u", shape=(self.num_capsules,), initializer="zeros"
        )
        self.beta_a = self.add_weight(
            name="beta_a", shape=(self.num_capsules,), initializer="zeros"
        )
        schedules.add_weight(self)

    def votes(self, poses):
        """`(batch, n_in, n_out, 16)` votes of `(batch, ..., 4, 4)` poses,
        in float32, coordinates added."""
        votes = ops.einsum("b...ik,...jkl->b...jil", poses, self.kernel)
        votes = ops.cast(votes, "float32")
        if self.on_grid and self.coordinate_addition:
            shape = ops.shape(poses)
            votes = votes + coordinate_offsets(shape[1], shape[2], "float32")
        batch = ops.shape(poses)[0]
        return ops.reshape(votes, (batch, -1, self.num_capsules, 16))

    def call(self, inputs, mask=None):
        activations, poses = inputs
        batch = ops.shape(activations)[0]
        mask = combined_input_mask(mask)
        if mask is not None:
            mask = ops.reshape(mask, (batch, -1))
        # Route in float32: float16 variances and log-densities lose range.
        votes = self.votes(poses)
        output_activations, means, _ = em_routing(
            votes,
            ops.reshape(ops.cast(activations, "float32"), (batch, -1)),
            ops.cast(self.beta_u, "float32"),
            ops.cast(self.beta_a, "float32"),
            self.inverse_temperature_weight,
            mask=mask,
            **em_activation.op_arguments(self, votes.shape[1]),
        )
        return [
            ops.cast(output_activations, self.compute_dtype),
            ops.cast(
                ops.reshape(means, (batch, self.num_capsules, 4, 4)),
                self.compute_dtype,
            ),
        ]

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        batch = input_shape[0][0]
        return [
            (batch, self.num_capsules),
            (batch, self.num_capsules, 4, 4),
        ]

    def get_config(self):
        return {
            **super().get_config(),
            "num_capsules": self.num_capsules,
            "coordinate_addition": self.coordinate_addition,
            "num_iterations": self.num_iterations,
            "inverse_temperatures": self.inverse_temperatures,
            **em_activation.config(self),
            "kernel_initializer": keras.initializers.serialize(
                self.kernel_initializer
            ),
            "kernel_regularizer": keras.regularizers.serialize(
                self.kernel_regularizer
            ),
        }
