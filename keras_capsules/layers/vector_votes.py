"""Votes as the routing ops take them: each `(d_cov, d_out)` vote
flattened, in the routing dtype; for the families that route vectors
(dynamic, uniform and self-attention routing), scaled by activations."""

from keras import ops

from keras_capsules.layers.capsule_routing import routing_dtype
from keras_capsules.ops.squash import safe_norm


def flat_votes(layer, poses):
    """`(batch, n_in, n_out, d_cov d_out)` votes `P_i W[i, j]` of
    `(batch, n_in, d_cov, d_in)` poses, in `layer`'s routing dtype
    (`layer` a `CapsuleRouting`)."""
    votes = ops.cast(layer.capsule_votes(poses), routing_dtype(layer))
    shape = ops.shape(votes)  # (b, i, j, c, h)
    size = votes.shape[-2] * votes.shape[-1]
    return ops.reshape(votes, (shape[0], shape[1], layer.num_capsules, size))


def vector_votes(layer, logits, poses):
    """`flat_votes` of the vectors `u_i = sigmoid(logit_i) P_i / |P_i|`
    (length the activation, direction the flattened pose: exactly the
    squashed vectors of the layer before, for either squash).

    `logits` `(batch, n_in)` (or None: the poses as they are) and `poses`
    `(batch, n_in, d_cov, d_in)`.
    """
    votes = flat_votes(layer, poses)
    if logits is None:
        return votes
    lengths = ops.sigmoid(logits) / safe_norm(
        ops.cast(poses, votes.dtype), axis=(-2, -1)
    )
    return votes * lengths[:, :, None, None]


def as_poses(layer, capsules, d_cov):
    """`(batch, n_out, d_cov, d_out)` poses of flattened `(batch, n_out,
    d_cov d_out)` capsules."""
    batch = ops.shape(capsules)[0]
    return ops.reshape(
        capsules, (batch, layer.num_capsules, d_cov, layer.capsule_dim)
    )
