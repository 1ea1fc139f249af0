"""Self-routing (Hahn, Pyeon, Kim, NeurIPS 2019): each input capsule
routes by its own small network, without agreement iterations."""

import keras
import numpy as np
from keras import ops

from keras_capsules.ops.arguments import check_rank, check_shape, routing_tensor
from keras_capsules.ops.log_domain import log_one_minus_exp, masked_log


def self_routing(votes, routing_logits, logits, mask=None):
    """Routes votes to parents by each child's own routing weights.

    ```none
    paper        code             shape
    u_hat[j|i]   votes            (batch, n_in, n_out, e)
    W_i u_i + b  routing_logits   (batch, n_in, n_out), from the layer's
                                  routing weights
    c[i, j]      routing          softmax of routing_logits over j
    a_i          -                sigmoid(logits_i), (batch, n_in)
    a_j          -                sum_i c[i, j] a_i / sum_i a_i
    u_j          poses            sum_i c[i, j] a_i u_hat[j|i] /
                                  sum_i c[i, j] a_i
    ```

    A parent's activation is the activation-weighted share of the
    children that route to it, and its pose the mean of their votes
    weighted by `c[i, j] a_i`. Everything is computed in the log domain:
    the parents' logits `logit(a_j) = log sum_i a_i c[i, j] - log sum_i
    a_i (1 - c[i, j])` and the weights `softmax_i(log a_i + log c[i, j])`,
    so no activation underflows to 0 and no weight divides by 0. A
    routing weight that rounds to 1 gives its parent the largest logit
    the dtype holds, `-log` of its smallest normal number (87 in
    float32). A masked input capsule (`mask[b, i]` False) counts as `a_i
    = 0`, so it changes no output; if no input takes part, every output
    is finite.

    Args:
        votes: float `(batch, n_in, n_out, e)` (float16 and bfloat16 route
            in float32; integers in `keras.config.floatx()`).
        routing_logits: float `(batch, n_in, n_out)`, each child's routing
            logits over the parents.
        logits: float `(batch, n_in)`, the children's activation logits.
        mask: optional bool `(batch, n_in)`, True for the input capsules
            that take part.

    Returns:
        `(logits, poses)`: `(batch, n_out)` parent logits and `(batch,
        n_out, e)` parent poses, in the votes' dtype.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 32, 10, 16))
        >>> logits, poses = self_routing(
        ...     votes, np.zeros((2, 32, 10)), np.zeros((2, 32)))
        >>> tuple(logits.shape), tuple(poses.shape)
        ((2, 10), (2, 10, 16))
    """
    name = "self_routing"
    votes, dtype = routing_tensor(name, "votes", votes)
    check_rank(name, "votes", votes, "(batch, n_in, n_out, e)")
    batch, num_inputs, num_outputs, _ = votes.shape
    dtype_name = keras.backend.standardize_dtype(votes.dtype)
    routing_logits = ops.cast(
        check_shape(
            name,
            "routing_logits",
            routing_logits,
            (batch, num_inputs, num_outputs),
        ),
        votes.dtype,
    )
    logits = check_shape(name, "logits", logits, (batch, num_inputs))
    log_activation = ops.log_sigmoid(ops.cast(logits, votes.dtype))  # (b, i)
    if mask is not None:
        check_shape(name, "mask", mask, (batch, num_inputs))
        log_activation = ops.where(mask, log_activation, masked_log(dtype_name))
    log_routing = ops.log_softmax(routing_logits, axis=-1)  # (b, i, j)
    log_share = log_activation[:, :, None] + log_routing  # log a_i c_ij
    log_rest = log_activation[:, :, None] + log_one_minus_exp(
        log_routing, tiny=float(np.finfo(dtype_name).tiny)
    )
    parent_logits = ops.logsumexp(log_share, axis=1) - ops.logsumexp(
        log_rest, axis=1
    )
    weights = ops.softmax(log_share, axis=1)  # c_ij a_i / sum_i c_ij a_i
    poses = ops.einsum("bij,bije->bje", weights, votes)
    return ops.cast(parent_logits, dtype), ops.cast(poses, dtype)
