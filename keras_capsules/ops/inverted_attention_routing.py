"""Inverted dot-product attention routing (Tsai, Srivastava, Goh,
Salakhutdinov, ICLR 2020, Procedure 1)."""

import math

from keras import ops

from keras_capsules.ops.arguments import (
    check_num_iterations,
    check_rank,
    check_shape,
    routing_tensor,
)

# Layer normalisation's epsilon, as in the authors' code (PyTorch's
# default): added to the variance of each pose.
LAYER_NORM_EPSILON = 1e-5


def inverted_attention_routing(
    votes, num_iterations=2, scale=None, offset=None, mask=None
):
    """Routes votes to parent poses by inverted dot-product attention.

    ```none
    paper        code          shape
    v[i, j]      votes         (batch, n_in, n_out, e): W[i, j] p_i,
                               flattened (e = d_cov d_out)
    p_j          poses         (batch, n_out, e)
    a[i, j]      agreement     p_j . v[i, j] / sqrt(e)
    r[i, j]      routing       softmax of a[i, :] over the parents j
    ```

    The first iteration starts from parents at 0, so every `a[i, j]` is 0
    and every child routes `1 / n_out` to each parent. Each iteration then
    sets `p_j = LayerNorm(sum_i r[i, j] v[i, j])` and, for the next,
    `a[i, j]` from the new poses. The softmax runs over the parents
    ("inverted": children compete for parents, not parents for children)
    and the parents' poses are normalised, not squashed. The agreement is
    scaled by `1 / sqrt(e)`, as in the authors' code. With
    `num_iterations=1` it is one pass with uniform routing. A masked input
    capsule (`mask[b, i]` False) routes nothing, so it changes no output.

    Layer normalisation works over each pose's `e` numbers: `(p -
    mean(p)) / sqrt(var(p) + 1e-5) * scale + offset`.

    Args:
        votes: float `(batch, n_in, n_out, e)` (float16 and bfloat16 route
            in float32; integers in `keras.config.floatx()`).
        num_iterations: int >= 1, routing iterations. Defaults to 2.
        scale: optional `(e,)` gain of the layer normalisation (None: 1).
        offset: optional `(e,)` offset of the layer normalisation (None: 0).
        mask: optional bool `(batch, n_in)`, True for the input capsules
            that take part.

    Returns:
        `(batch, n_out, e)` parent poses, in the votes' dtype.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 32, 10, 16))
        >>> poses = inverted_attention_routing(votes, num_iterations=2)
        >>> tuple(poses.shape)
        (2, 10, 16)
    """
    name = "inverted_attention_routing"
    votes, dtype = routing_tensor(name, "votes", votes)
    check_rank(name, "votes", votes, "(batch, n_in, n_out, e)")
    check_num_iterations(name, num_iterations)
    _, num_inputs, num_outputs, size = votes.shape
    weight = None  # (b, i, 1): 1 for inputs that take part, else 0.
    if mask is not None:
        check_shape(name, "mask", mask, (votes.shape[0], num_inputs))
        weight = ops.cast(mask, votes.dtype)[:, :, None]
    if scale is not None:
        scale = ops.cast(
            check_shape(name, "scale", scale, (size,)), votes.dtype
        )
    if offset is not None:
        offset = ops.cast(
            check_shape(name, "offset", offset, (size,)), votes.dtype
        )
    # Parents at 0: every agreement is 0, every child routes 1 / n_out.
    routing = ops.full_like(votes[..., 0], 1.0 / num_outputs)  # (b, i, j)
    poses = _parent_poses(votes, routing, weight, scale, offset)  # (b, j, e)
    for _ in range(num_iterations - 1):
        agreement = ops.einsum("bije,bje->bij", votes, poses)
        routing = ops.softmax(agreement / math.sqrt(size), axis=-1)
        poses = _parent_poses(votes, routing, weight, scale, offset)
    return ops.cast(poses, dtype)


def _parent_poses(votes, routing, weight, scale, offset):
    """`LayerNorm(sum_i r[i, j] v[i, j])`, `(b, j, e)`, over the inputs
    that take part (`weight` 1, or None for all)."""
    if weight is not None:
        routing = routing * weight
    return _layer_norm(
        ops.einsum("bij,bije->bje", routing, votes), scale, offset
    )


def _layer_norm(poses, scale, offset):
    """Normalises each pose over its last axis, then scales and offsets.
    Means are sums divided by the size: Keras's `ops.mean` on JAX sums
    float64 in float32."""
    size = poses.shape[-1]
    centred = poses - ops.sum(poses, axis=-1, keepdims=True) / size
    variance = ops.sum(ops.square(centred), axis=-1, keepdims=True) / size
    poses = centred / ops.sqrt(variance + LAYER_NORM_EPSILON)
    if scale is not None:
        poses = poses * scale
    if offset is not None:
        poses = poses + offset
    return poses
