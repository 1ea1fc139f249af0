"""Non-iterative self-attention routing (Mazzia, Salvetti, Chiaberge
2021, Efficient-CapsNet, eqs. 2-5)."""

import math

from keras import ops

from keras_capsules.ops.arguments import (
    check_broadcastable,
    check_rank,
    check_shape,
    routing_tensor,
)
from keras_capsules.ops.squash import exponential_squash


def self_attention_routing(votes, coupling_priors=None, mask=None):
    """Routes votes to output capsules in one pass of self-attention.

    ```none
    paper          code             shape
    u_hat[j|i]     votes            (batch, n_in, n_out, d_out)
    A_j            -                (n_in, n_in): u_hat_j u_hat_j^T /
                                    sqrt(d_out) (eq. 3)
    sum_k A_j[i,k] agreement        (batch, n_in, n_out): u_hat[j|i] .
                                    sum_k u_hat[j|k] / sqrt(d_out)
    C              coupling         softmax of the agreement over j (eq. 4)
    B              coupling_priors  (n_in, n_out), learned (log priors)
    s_j            total_input      sum_i (C[i, j] + B[i, j]) u_hat[j|i]
                                    (eq. 5)
    v_j            capsules         (1 - exp(-|s_j|)) s_j / |s_j| (eq. 2)
    ```

    Each output capsule's self-attention matrix `A_j` holds the
    agreement of every pair of votes for it; a vote's coupling to j is the
    softmax over j of its row sum, the agreement of the vote with all the
    votes for j. `A_j` is never formed: its row sums are `u_hat[j|i] .
    sum_k u_hat[j|k]`, `n_in` times fewer products. `d_out` is the size
    of a vote, as in the authors' code (which scales by the output
    capsules' size). A masked input capsule (`mask[b, i]` False) neither
    votes nor enters the sums `sum_k`, so it changes no output.

    Args:
        votes: float `(batch, n_in, n_out, d_out)` (float16 and bfloat16
            route in float32; integers in `keras.config.floatx()`).
        coupling_priors: optional float, broadcastable to `(n_in, n_out)`:
            the learned `B` (the authors initialise it to 0). None for 0.
        mask: optional bool `(batch, n_in)`, True for the input capsules
            that take part.

    Returns:
        `(batch, n_out, d_out)` output capsules `v`, each of length < 1, in
        the votes' dtype.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 16, 10, 16))
        >>> capsules = self_attention_routing(votes)
        >>> tuple(capsules.shape)
        (2, 10, 16)
    """
    name = "self_attention_routing"
    votes, dtype = routing_tensor(name, "votes", votes)
    check_rank(name, "votes", votes, "(batch, n_in, n_out, d_out)")
    _, num_inputs, num_outputs, dim = votes.shape
    if mask is not None:  # A masked capsule's vote is 0: it adds nothing.
        check_shape(name, "mask", mask, (votes.shape[0], num_inputs))
        votes = votes * ops.cast(mask, votes.dtype)[:, :, None, None]
    vote_sums = ops.sum(votes, axis=1)  # (b, j, h): sum_k u_hat[j|k].
    agreement = ops.einsum("bijh,bjh->bij", votes, vote_sums) / math.sqrt(dim)
    coupling = ops.softmax(agreement, axis=-1)  # Eq. 4, (b, i, j).
    if coupling_priors is not None:
        priors = check_broadcastable(
            name, "coupling_priors", coupling_priors, (num_inputs, num_outputs)
        )
        coupling = coupling + ops.cast(priors, votes.dtype)
    total_input = ops.einsum("bij,bijh->bjh", coupling, votes)  # Eq. 5.
    return ops.cast(exponential_squash(total_input), dtype)  # Eq. 2.
