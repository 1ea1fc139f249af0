"""Fully connected capsules routed by agreement (Sabour et al. 2017)."""

import keras

from keras_capsules.layers.capsule_routing import (
    SHARE_WEIGHTS_HINT,
    CapsuleRouting,
)
from keras_capsules.layers.vector_votes import as_poses, vector_votes
from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.dynamic_routing import dynamic_routing
from keras_capsules.ops.squash import squashed_length_logit

# Sabour et al. do not give an initialisation. A normal of std 0.1 gives
# CapsNet's output capsules lengths around 0.5 at the start, away from both
# the flat and the saturated ends of the squash.
_DEFAULT_KERNEL_STDDEV = 0.1


@keras.saving.register_keras_serializable(package="keras_capsules")
class DynamicRouting(CapsuleRouting):
    """Capsules routed by agreement (Sabour et al., 2017).

    Each input capsule votes `u_hat[j|i] = W_ij u_i` for each output
    capsule j, and `keras_capsules.ops.dynamic_routing` turns the votes
    into output capsules (Procedure 1). The layer speaks the capsule
    contract (see `CapsuleRouting`): the inputs `[logits, poses]` route
    as the vectors `u_i = sigmoid(logit_i) P_i / |P_i|` (length the
    activation, direction the flattened pose: exactly the squashed
    vectors of a dynamic-routing layer, or of `PrimaryCapsules`, before
    it), and the outputs are `[2 log |s_j|, v_j]`, since `|v_j| =
    sigmoid(2 log |s_j|)`. With `share_weights=True` every input capsule
    uses the same `W_j`, so the number of input capsules may vary from
    call to call, and a mask (Keras masking, or the `mask` argument) says
    which inputs take part.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, size of each output capsule `d_out` (columns of
            its pose).
        num_iterations: int, routing iterations `r`. Defaults to `3`.
        share_weights: bool, one `W_j` for all input capsules. Defaults to
            `False` (a `W_ij` per input and output pair, as in CapsNet).
        **kwargs: `kernel_initializer` (of the kernel; by default a normal
            of standard deviation 0.1), `kernel_regularizer` (optional, of
            the kernel) and base layer arguments (`name`, `dtype`,
            `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, n_in)` and `(batch, n_in,
            d_cov, d_in)` (or on a grid, see `CapsuleRouting`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `[logits, poses]`: `(batch, n_out)` logits `2 log |s_j|` of the
        capsules' lengths and `(batch, n_out, d_cov, d_out)` capsules
        `v_j`, each of length < 1.

    Examples:

        >>> layer = DynamicRouting(num_capsules=10, capsule_dim=16)
        >>> logits, capsules = layer([np.zeros((2, 1152)),
        ...                           np.ones((2, 1152, 1, 8))])
        >>> tuple(capsules.shape)
        (2, 10, 1, 16)
    """

    _SHARED_WEIGHTS_HINT = SHARE_WEIGHTS_HINT

    def __init__(
        self,
        num_capsules,
        capsule_dim,
        num_iterations=3,
        share_weights=False,
        **kwargs,
    ):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.num_iterations = positive_int(
            type(self).__name__, "num_iterations", num_iterations
        )
        self.share_weights = bool(share_weights)

    @property
    def shares_input_weights(self):
        return self.share_weights

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.RandomNormal(stddev=_DEFAULT_KERNEL_STDDEV)

    def _route(self, logits, poses, mask):
        # Route in float32 (float64 under a float64 policy): float16
        # agreement sums lose precision.
        capsules = dynamic_routing(
            vector_votes(self, logits, poses), self.num_iterations, mask=mask
        )
        capsules = as_poses(self, capsules, poses.shape[-2])
        return squashed_length_logit(capsules, axis=(-2, -1)), capsules

    def get_config(self):
        return {
            **super().get_config(),
            "num_iterations": self.num_iterations,
            "share_weights": self.share_weights,
        }
