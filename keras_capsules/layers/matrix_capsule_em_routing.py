"""Class capsules routed by EM, with coordinate addition (Hinton, Sabour,
Frosst 2018, sec. 4)."""

import keras
import numpy as np
from keras import ops

from keras_capsules.layers import em_activation, validation
from keras_capsules.layers.capsule_routing import CapsuleRouting
from keras_capsules.layers.masks import combined_input_mask
from keras_capsules.ops.em_routing import VARIANCE_FLOOR, em_routing


def coordinate_offsets(height, width, dtype, pose_columns=4):
    """`(H, W, 1, 1, 4, pose_columns)`: the scaled row `(y + 0.5) / H` at
    entry `(0, -1)` and column `(x + 0.5) / W` at entry `(1, -1)` of each
    vote, the first two entries of its right-hand column; zero
    elsewhere."""
    rows = (ops.cast(ops.arange(height), dtype) + 0.5) / ops.cast(height, dtype)
    columns = (ops.cast(ops.arange(width), dtype) + 0.5) / ops.cast(
        width, dtype
    )
    row_entry = np.zeros((4, pose_columns), "float32")
    row_entry[0, -1] = 1.0
    column_entry = np.zeros((4, pose_columns), "float32")
    column_entry[1, -1] = 1.0
    offsets = rows[:, None, None, None, None, None] * ops.cast(
        row_entry, dtype
    ) + columns[None, :, None, None, None, None] * ops.cast(column_entry, dtype)
    return offsets


@keras.saving.register_keras_serializable(package="keras_capsules")
class MatrixCapsuleEMRouting(CapsuleRouting):
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

    With `contract=True` the layer speaks the capsule contract (see
    `CapsuleRouting`): inputs `[logits, poses]`, `(batch, n)` and `(batch,
    n, d_cov, d_in)` poses of any size, activations `sigmoid(logits)`,
    and outputs `[logits, poses]`, the logits of the output activations
    (`lambda (beta_a - cost_j)`, exact where the activation rounds to 0
    or 1) and `(batch, n_out, d_cov, capsule_dim)` poses.

    Args:
        num_capsules: int, output capsules `n_out`.
        coordinate_addition: bool. Defaults to `True`.
        num_iterations: int >= 1, routing iterations. Defaults to `3`.
        inverse_temperatures: optional list of `num_iterations` floats; None
            for `inverse_temperatures.default_inverse_temperatures`. Held in
            a non-trainable weight (see `ConvMatrixCapsules`).
        activation_bias_gain: float, as for `ConvMatrixCapsules`.
            Defaults to the paper's `1.0`.
        cost_normalization: how routing scales the costs, as for
            `ConvMatrixCapsules` (`"per_child"` counts every input capsule
            as a child). Defaults to the paper's `"none"`.
        variance_floor: float added to every variance, as for
            `ConvMatrixCapsules`. Defaults to the paper's 1e-9.
        kernel_initializer: initializer of `W`. Defaults to a truncated
            normal of standard deviation 0.5.
        kernel_regularizer: optional regularizer of `W`.
        assignment_smoothing: float `eps` in `[0, 1)`: every M-step after
            the first weighs a child by `(1 - eps) R_ij + eps R0_ij`, where
            `R0` is its first, uniform assignment, so that no parent
            collapses onto a single child. Defaults to `0.0` (the paper).
        capsule_dim: int, columns of each output pose. Defaults to `4`
            (the paper's 4x4).
        contract: bool, take and return `[logits, poses]`. Defaults to
            `False`.
        **kwargs: base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[activations, poses]`: `(batch, H, W, D)` and
            `(batch, H, W, D, 4, 4)`, or `(batch, n)` and `(batch, n, 4, 4)`.
        mask: optional bool mask of the activations' shape, True for input
            capsules that take part; a masked capsule changes no output.

    Returns:
        `[activations, poses]`: `(batch, n_out)` in `[0, 1]` and
        `(batch, n_out, 4, capsule_dim)`.

    Example:

    >>> layer = MatrixCapsuleEMRouting(10)
    >>> activations, poses = layer([np.ones((2, 3, 3, 8)),
    ...                             np.zeros((2, 3, 3, 8, 4, 4))])
    >>> activations.shape
    TensorShape([2, 10])
    """

    _SHARED_WEIGHTS_HINT = (
        " For capsules whose number varies, pass a grid (batch, H, W, B) "
        "without `contract`: its weights are shared across positions."
    )

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
        capsule_dim=4,
        contract=False,
        **kwargs,
    ):
        super().__init__(
            num_capsules,
            capsule_dim,
            num_iterations,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            contract=contract,
            **kwargs,
        )
        self.coordinate_addition = bool(coordinate_addition)
        em_activation.set_arguments(
            self,
            inverse_temperatures,
            activation_bias_gain,
            cost_normalization,
            variance_floor,
            assignment_smoothing,
            self.num_capsules,
        )
        self.on_grid = False

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.TruncatedNormal(stddev=0.5)

    def _own_form_shape(self, input_shape):
        grid = validation.matrix_capsule_shapes(self, input_shape)
        self.on_grid = len(grid) == 4  # W[t, j] on a grid, else W[i, j].
        return grid[-1], 4, 4

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        em_activation.add_weights(self, self.num_capsules)

    def _free_axes(self):
        # On a grid, the weights are per type: any grid size works.
        return {1, 2} if self.on_grid else set()

    def votes(self, poses):
        """`(batch, n_in, n_out, d_cov d_out)` votes of `(batch, ..., d_cov,
        d_in)` poses, in float32, coordinates added on a grid."""
        poses = ops.cast(poses, self.compute_dtype)
        shape = ops.shape(poses)
        types, d_cov = self.kernel.shape[0], poses.shape[-2]
        votes = self.capsule_votes(  # Positions of a grid as examples.
            ops.reshape(poses, (-1, types, d_cov, poses.shape[-1]))
        )
        votes = ops.cast(votes, "float32")
        if self.on_grid:
            votes = ops.reshape(votes, (*shape[:3], *votes.shape[1:]))
            if self.coordinate_addition:
                votes = votes + coordinate_offsets(
                    shape[1], shape[2], "float32", self.capsule_dim
                )
        return ops.reshape(
            votes, (shape[0], -1, self.num_capsules, d_cov * self.capsule_dim)
        )

    def _route(self, logits, poses, mask):
        return self._em_routing(ops.sigmoid(logits), poses, mask)

    def _em_routing(self, activations, poses, mask):
        """Float32 `(logits, means, variances)` of the output capsules."""
        batch = ops.shape(activations)[0]
        if mask is not None:
            mask = ops.reshape(mask, (batch, -1))
        # Route in float32: float16 variances and log-densities lose range.
        votes = self.votes(poses)
        logits, means, variances = em_routing(
            votes,
            ops.reshape(ops.cast(activations, "float32"), (batch, -1)),
            ops.cast(self.beta_u, "float32"),
            ops.cast(self.beta_a, "float32"),
            self.inverse_temperature_weight,
            mask=mask,
            return_logits=True,
            **em_activation.op_arguments(self, votes.shape[1]),
        )
        shape = (batch, self.num_capsules, poses.shape[-2], self.capsule_dim)
        return logits, ops.reshape(means, shape), ops.reshape(variances, shape)

    def _call_own_form(self, inputs, mask):
        activations, poses = inputs
        logits, means, _ = self._em_routing(
            activations, poses, combined_input_mask(mask)
        )
        return [
            ops.cast(ops.sigmoid(logits), self.compute_dtype),
            ops.cast(means, self.compute_dtype),
        ]

    def _own_output_shape(self, input_shape):
        batch = input_shape[0][0]
        return [
            (batch, self.num_capsules),
            (batch, self.num_capsules, 4, self.capsule_dim),
        ]

    def get_config(self):
        return {
            **super().get_config(),
            "coordinate_addition": self.coordinate_addition,
            **em_activation.config(self),
        }
