"""The M-step's weighted moments of the votes and the next E-step's
squared distances (Hinton, Sabour, Frosst 2018, Procedure 1: M-step lines
3-4, E-step line 2).

```none
paper                         code                 shape
R_ij a_i                      weights              (batch, P, J, I)
V_ij^h                        votes                (batch, P, J, I, h)
sum_i R_ij a_i                total                (batch, P, J)
mu_j^h                        means                (batch, P, J, h)
(sigma_j^h)^2                 variances            (batch, P, J, h)
sum_h (V_ij^h - mu_j^h)^2
      / (sigma_j^h)^2         squared_distances    (batch, P, J, I)
```

`P` parent positions, `J` parent types, `I` children per position.
"""

from keras import ops

from keras_capsules.ops.fast_paths import fast_path


def nonzero(total):
    """`total` with its zeros replaced by 1: the denominator of a weighted
    mean. A parent that no active child votes for (every `R_ij a_i = 0`)
    then gets mean 0 and variance 0, not NaN, and a bounded gradient
    (`1 / (total + 1e-9)` would give ~1e9 there)."""
    return ops.where(total > 0, total, ops.ones_like(total))


def weighted_moments(
    votes, weights, variance_floor, with_distances, gradient_probe=None
):
    """`(total, means, variances[, squared_distances])` of the votes.

    `mu = sum_i s_i V_i` and `sigma^2 = sum_i s_i (V_i - mu)^2 + floor`
    with shares `s_i = R_ij a_i / sum_i R_ij a_i`: two passes, not
    `E[V^2] - mu^2`, so that a parent that settles on one tight cluster
    keeps its small variance in float32. `squared_distances` (only with
    `with_distances`, for an E-step that follows) reuse the M-step's
    `(V - mu)^2`.

    Differentiated automatically, or by the backend's own gradient where
    it has one (TensorFlow: `backend/tensorflow/em_moments.py`, which also
    takes a `gradient_probe`, one of its `gradient_probes(votes, n)`).
    """
    moments = fast_path("weighted_moments")
    if moments is not None:
        return moments(
            votes, weights, variance_floor, with_distances, gradient_probe
        )
    outputs, _ = moments_and_shares(
        votes, weights, variance_floor, with_distances
    )
    return outputs


def moments_and_shares(votes, weights, variance_floor, with_distances):
    """The outputs of `weighted_moments` and the shares `s_i`."""
    total = ops.sum(weights, axis=-1)
    shares = weights / nonzero(total)[..., None]
    means = ops.einsum("bpji,bpjih->bpjh", shares, votes)
    squared_deviations = ops.square(votes - means[..., None, :])
    variances = ops.einsum("bpji,bpjih->bpjh", shares, squared_deviations)
    variances = variances + variance_floor
    outputs = (total, means, variances)
    if with_distances:
        outputs += (
            ops.einsum("bpjih,bpjh->bpji", squared_deviations, 1.0 / variances),
        )
    return outputs, shares
