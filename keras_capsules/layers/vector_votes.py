"""The votes of vector capsules: what the families that route vectors
(dynamic, uniform and self-attention routing) make of the contract."""

from keras import ops

from keras_capsules.layers.capsule_routing import routing_dtype
from keras_capsules.ops.squash import safe_norm


def vector_votes(layer, logits, poses):
    """`(batch, n_in, n_out, d_cov d_out)` votes `W[i, j] u_i` of the
    vectors `u_i = sigmoid(logit_i) P_i / |P_i|` (length the activation,
    direction the flattened pose: exactly the squashed vectors of the
    layer before, for either squash), in `layer`'s routing dtype.

    `layer` is a `CapsuleRouting`; `logits` `(batch, n_in)` (or None:
    the poses as they are) and `poses` `(batch, n_in, d_cov, d_in)`.
    """
    dtype = routing_dtype(layer)
    votes = ops.cast(layer.capsule_votes(poses), dtype)  # (b, i, j, c, h)
    if logits is not None:
        lengths = ops.sigmoid(logits) / safe_norm(
            ops.cast(poses, dtype), axis=(-2, -1)
        )
        votes = votes * lengths[:, :, None, None, None]
    shape = ops.shape(votes)
    d_cov, d_out = votes.shape[-2], votes.shape[-1]
    return ops.reshape(
        votes, (shape[0], shape[1], layer.num_capsules, d_cov * d_out)
    )


def as_poses(layer, capsules, d_cov):
    """`(batch, n_out, d_cov, d_out)` poses of flattened `(batch, n_out,
    d_cov d_out)` capsules."""
    batch = ops.shape(capsules)[0]
    return ops.reshape(
        capsules, (batch, layer.num_capsules, d_cov, layer.capsule_dim)
    )
