"""Class capsules routed by EM, with coordinate addition (Hinton, Sabour,
Frosst 2018, sec. 4)."""

import keras
import numpy as np
from keras import ops

from keras_capsules.layers import em_activation
from keras_capsules.layers.capsule_routing import (
    CapsuleRouting,
    routing_dtype,
)
from keras_capsules.ops.em_routing import em_routing


def coordinate_offsets(height, width, dtype, pose_rows=4, pose_columns=4):
    """`(H, W, 1, 1, pose_rows, pose_columns)`: the scaled row `(y + 0.5) /
    H` at entry `(0, -1)` and column `(x + 0.5) / W` at entry `(1, -1)` of
    each vote, the first two entries of its right-hand column; zero
    elsewhere."""
    rows = (ops.cast(ops.arange(height), dtype) + 0.5) / ops.cast(height, dtype)
    columns = (ops.cast(ops.arange(width), dtype) + 0.5) / ops.cast(
        width, dtype
    )
    row_entry = np.zeros((pose_rows, pose_columns), "float32")
    row_entry[0, -1] = 1.0
    column_entry = np.zeros((pose_rows, pose_columns), "float32")
    column_entry[1, -1] = 1.0
    offsets = rows[:, None, None, None, None, None] * ops.cast(
        row_entry, dtype
    ) + columns[None, :, None, None, None, None] * ops.cast(column_entry, dtype)
    return offsets


@keras.saving.register_keras_serializable(package="keras_capsules")
class MatrixCapsuleEMRouting(CapsuleRouting):
    """Matrix capsules routed by EM to `num_capsules` capsules, e.g. one
    per class (the paper's Class Capsules).

    Each input capsule (pose `M_i`, activation `a_i = sigmoid(logit_i)`)
    votes `V_ij = M_i W` for each output capsule j, and
    `keras_capsules.ops.em_routing` (Procedure 1) turns votes and
    activations into output poses (the means) and activations. The layer
    speaks the capsule contract (see `CapsuleRouting`), in two layouts:

    - a grid, `(batch, H, W, B)` logits and `(batch, H, W, B, d_cov,
      d_in)` poses, as from `ConvMatrixCapsules`: one `W[t, j]` per
      capsule type t, shared across positions, so any grid size works.
      With `coordinate_addition` (the default) the scaled centre of each
      capsule's position, `((y + 0.5) / H, (x + 0.5) / W)`, is added to
      the first two entries of the right-hand column of its votes;
    - a list, `(batch, n)` and `(batch, n, d_cov, d_in)`: one `W[i, j]`
      per input capsule; coordinate addition does not apply.

    `beta_u`, `beta_a` are learned per output capsule. The output logits
    are `lambda (beta_a - cost_j)`, exact where the activation rounds to
    0 or 1.

    Args:
        num_capsules: int, output capsules `n_out`.
        capsule_dim: int, columns of each output pose. Defaults to `4`
            (the paper's 4x4).
        coordinate_addition: bool. Defaults to `True`.
        routing: `EMRouting` settings (iterations, inverse temperatures,
            how costs become activations), or the name of one of its
            presets. Defaults to Procedure 1 as written, the `"paper"`
            preset. The inverse temperatures are held in a non-trainable
            weight that `callbacks.InverseTemperatureSchedule` may change.
        **kwargs: `kernel_initializer` (of `W`; by default a truncated
            normal of standard deviation 0.5), `kernel_regularizer`
            (optional, of `W`) and base layer arguments (`name`, `dtype`,
            `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, on a grid or as a list.
        mask: optional bool mask of the logits' shape, True for input
            capsules that take part; a masked capsule changes no output.

    Returns:
        `[logits, poses]`: `(batch, n_out)` activation logits and `(batch,
        n_out, d_cov, capsule_dim)` poses.

    Examples:

        >>> layer = MatrixCapsuleEMRouting(10, routing="standardized")
        >>> logits, poses = layer([np.zeros((2, 3, 3, 8)),
        ...                        np.ones((2, 3, 3, 8, 4, 4))])
        >>> tuple(poses.shape)
        (2, 10, 4, 4)
    """

    _SHARED_WEIGHTS_HINT = (
        " For capsules whose number varies, pass a grid (batch, H, W, B): "
        "its weights are shared across positions."
    )
    _ROUTES_GRIDS = True

    def __init__(
        self,
        num_capsules,
        capsule_dim=4,
        coordinate_addition=True,
        routing=None,
        **kwargs,
    ):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.coordinate_addition = bool(coordinate_addition)
        em_activation.set_routing(self, routing, self.num_capsules)

    @property
    def num_iterations(self):
        """Routing iterations (`routing.num_iterations`)."""
        return self.routing.num_iterations

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.TruncatedNormal(stddev=0.5)

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        if self.on_grid and self.coordinate_addition and d_cov < 2:
            raise ValueError(
                f"`{self.name}` adds each capsule's position to rows 0 and "
                "1 of its votes (coordinate addition), which needs poses of "
                f"at least 2 rows. Received poses of {d_cov} row(s). Pass "
                "coordinate_addition=False."
            )
        em_activation.add_weights(self, self.num_capsules)

    def votes(self, poses):
        """`(batch, n_in, n_out, d_cov d_out)` votes of `(batch, *capsules,
        d_cov, d_in)` poses, in the routing dtype (float32, or float64
        under a float64 policy), coordinates added on a grid."""
        dtype = routing_dtype(self)
        poses = ops.cast(poses, self.compute_dtype)
        shape = ops.shape(poses)
        types, d_cov = self.kernel.shape[0], poses.shape[-2]
        votes = self.capsule_votes(  # Positions of a grid as examples.
            ops.reshape(poses, (-1, types, d_cov, poses.shape[-1]))
        )
        votes = ops.cast(votes, dtype)
        if self.on_grid:
            votes = ops.reshape(votes, (*shape[:3], *votes.shape[1:]))
            if self.coordinate_addition:
                votes = votes + coordinate_offsets(
                    shape[1], shape[2], dtype, d_cov, self.capsule_dim
                )
        return ops.reshape(
            votes, (shape[0], -1, self.num_capsules, d_cov * self.capsule_dim)
        )

    def _route(self, logits, poses, mask):
        return self._route_activations(ops.sigmoid(logits), poses, mask)

    def _route_activations(self, activations, poses, mask):
        """`(logits, means, variances)` of the output capsules, in the
        routing dtype."""
        dtype = routing_dtype(self)
        batch = ops.shape(activations)[0]
        if mask is not None:
            mask = ops.reshape(mask, (batch, -1))
        # Route in float32 (float64 under a float64 policy).
        votes = self.votes(poses)
        logits, means, variances = em_routing(
            votes,
            ops.reshape(ops.cast(activations, dtype), (batch, -1)),
            ops.cast(self.beta_u, dtype),
            ops.cast(self.beta_a, dtype),
            self.inverse_temperature_weight,
            mask=mask,
            cost=em_activation.op_cost(self, votes.shape[1]),
            return_logits=True,
        )
        shape = (batch, self.num_capsules, poses.shape[-2], self.capsule_dim)
        return logits, ops.reshape(means, shape), ops.reshape(variances, shape)

    def get_config(self):
        return {
            **super().get_config(),
            "coordinate_addition": self.coordinate_addition,
            **em_activation.config(self),
        }
