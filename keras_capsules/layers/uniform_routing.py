"""Capsules without routing: every vote weighs the same (the baseline of
Paik, Kwak, Kim 2019 and Gu, Tresp 2020)."""

import keras

from keras_capsules.layers.capsule_routing import (
    SHARE_WEIGHTS_HINT,
    CapsuleRouting,
)
from keras_capsules.layers.vector_votes import as_poses, vector_votes
from keras_capsules.ops.squash import squashed_length_logit
from keras_capsules.ops.uniform_routing import uniform_routing

# As `DynamicRouting`: the same votes, so the two compare on equal terms.
_DEFAULT_KERNEL_STDDEV = 0.1


@keras.saving.register_keras_serializable(package="keras_capsules")
class UniformRouting(CapsuleRouting):
    """Vector capsules with uniform coupling: the no-routing baseline.

    Each input capsule votes `u_hat[j|i] = W_ij u_i` for each output
    capsule j with the same weight `1 / n_out`, and the output is
    `squash(sum_i u_hat[j|i] / n_out)` (`keras_capsules.ops.uniform_routing`):
    `DynamicRouting` with one iteration, the baseline against which a
    routing algorithm shows what its iterations add. The layer speaks the
    capsule contract as `DynamicRouting` does: inputs `[logits, poses]`
    route as the vectors `u_i = sigmoid(logit_i) P_i / |P_i|`; outputs are
    `[2 log |s_j|, v_j]`. With `share_weights=True` every input capsule
    uses the same `W_j`, so the number of input capsules may vary, and a
    mask says which take part.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, size of each output capsule `d_out` (columns of
            its pose).
        share_weights: bool, one `W_j` for all input capsules. Defaults to
            `False`.
        **kwargs: `kernel_initializer` (by default a normal of standard
            deviation 0.1, as `DynamicRouting`), `kernel_regularizer` and
            base layer arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, n_in)` and `(batch, n_in,
            d_cov, d_in)` (or on a grid, see `CapsuleRouting`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `[logits, poses]`: `(batch, n_out)` logits `2 log |s_j|` and
        `(batch, n_out, d_cov, d_out)` capsules `v_j`, each of length < 1.

    Examples:

        >>> layer = UniformRouting(num_capsules=10, capsule_dim=16)
        >>> logits, capsules = layer([np.zeros((2, 32)),
        ...                           np.ones((2, 32, 1, 8))])
        >>> tuple(capsules.shape)
        (2, 10, 1, 16)
    """

    _SHARED_WEIGHTS_HINT = SHARE_WEIGHTS_HINT

    def __init__(
        self, num_capsules, capsule_dim, share_weights=False, **kwargs
    ):
        # kwargs: the kernel's arguments and the base layer's.
        super().__init__(num_capsules, capsule_dim, **kwargs)
        self.share_weights = bool(share_weights)

    @property
    def shares_input_weights(self):
        return self.share_weights

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.RandomNormal(stddev=_DEFAULT_KERNEL_STDDEV)

    def _route(self, logits, poses, mask):
        capsules = uniform_routing(vector_votes(self, logits, poses), mask)
        capsules = as_poses(self, capsules, poses.shape[-2])
        return squashed_length_logit(capsules, axis=(-2, -1)), capsules

    def get_config(self):
        return {**super().get_config(), "share_weights": self.share_weights}
