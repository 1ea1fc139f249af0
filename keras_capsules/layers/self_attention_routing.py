"""Capsules routed by self-attention in one pass (Mazzia, Salvetti,
Chiaberge 2021, Efficient-CapsNet)."""

import keras
from keras import ops

from keras_capsules.layers.capsule_routing import CapsuleRouting
from keras_capsules.layers.vector_votes import as_poses, vector_votes
from keras_capsules.ops.self_attention_routing import self_attention_routing
from keras_capsules.ops.squash import squashed_length_logit


@keras.saving.register_keras_serializable(package="keras_capsules")
class SelfAttentionRouting(CapsuleRouting):
    """Capsules routed by self-attention, without iterations (Mazzia et
    al. 2021).

    Each input capsule votes `u_hat[j|i] = W_ij u_i`; each vote's coupling
    to j is the softmax over j of its agreement with all the votes for j,
    plus a learned prior `B_ij`, and the output capsule is the
    exponentially squashed sum (`keras_capsules.ops.self_attention_routing`,
    eqs. 2-5). The layer speaks the capsule contract as `DynamicRouting`
    does: inputs `[logits, poses]` route as the vectors `u_i =
    sigmoid(logit_i) P_i / |P_i|`, and the outputs are `[logit of |v_j|,
    v_j]` with `|v_j| = 1 - exp(-|s_j|)`, so the logit is `log(exp(|s_j|)
    - 1)`. A mask says which input capsules take part.

    Args:
        num_capsules: int, number of output capsules `n_out`.
        capsule_dim: int, size of each output capsule `d_out` (columns of
            its pose).
        **kwargs: `kernel_initializer` (by default He's normal, as the
            authors'), `kernel_regularizer` and base layer arguments
            (`name`, `dtype`, `trainable`).

    Call arguments:
        inputs: `[logits, poses]`, `(batch, n_in)` and `(batch, n_in,
            d_cov, d_in)` (or on a grid, see `CapsuleRouting`).
        mask: optional bool `(batch, n_in)`, True for input capsules that
            take part.

    Returns:
        `[logits, poses]`: `(batch, n_out)` logits of the capsules' lengths
        and `(batch, n_out, d_cov, d_out)` capsules `v_j`, each of length
        < 1.

    Examples:

        >>> layer = SelfAttentionRouting(num_capsules=10, capsule_dim=16)
        >>> logits, capsules = layer([np.zeros((2, 16)),
        ...                           np.ones((2, 16, 1, 8))])
        >>> tuple(capsules.shape)
        (2, 10, 1, 16)
    """

    def _default_kernel_initializer(self, d_in):
        return keras.initializers.HeNormal()

    def _build_routing(self, num_inputs, d_cov, d_in, initializer):
        self.coupling_priors = self.add_weight(  # B: (n_in, n_out)
            name="coupling_priors",
            shape=(num_inputs, self.num_capsules),
            initializer="zeros",
        )

    def _route(self, logits, poses, mask):
        votes = vector_votes(self, logits, poses)
        capsules = self_attention_routing(
            votes, ops.cast(self.coupling_priors, votes.dtype), mask
        )
        capsules = as_poses(self, capsules, poses.shape[-2])
        return squashed_length_logit(capsules, axis=(-2, -1)), capsules
