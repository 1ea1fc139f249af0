"""TensorFlow's gradient of EM routing's weighted moments
(`ops.em_moments`): formed in a few batched products over the votes, or,
with a gradient probe, passed to the probe as factors."""

import tensorflow as tf  # the custom gradient
from keras import ops

from keras_capsules.backend.tensorflow.compilation import compiled_by_xla
from keras_capsules.ops.em_moments import moments_and_shares, nonzero


def weighted_moments(
    votes, weights, variance_floor, with_distances, gradient_probe=None
):
    """`ops.em_moments.weighted_moments`, differentiated by TensorFlow's
    own gradient.

    The gradient (see `_backward`) is formed in a few batched products
    over the votes; automatic differentiation wrote out a vote-sized
    tensor for every sum and kept `V - mu` and `(V - mu)^2` of every
    iteration alive (this step, forward and backward, took 1.8x as long
    at the convolutional EM shape in `tf.function`). Under XLA, which
    fuses the elementwise work of automatic differentiation into few
    passes, the plain form is used: there it was as fast.

    With a `gradient_probe` (one of `gradient_probes(votes, n)`), the
    votes' gradient goes to the probe as factors instead, and the votes'
    whole gradient is formed once from the factors of every call (see
    `gradient_probes`, which also says why the votes must be centred).
    """
    if gradient_probe is not None:
        return _moments_through_probe(
            votes, weights, variance_floor, with_distances, gradient_probe
        )
    if compiled_by_xla():
        return moments_and_shares(
            votes, weights, variance_floor, with_distances
        )[0]

    @tf.custom_gradient
    def moments(votes, weights):
        outputs, shares = moments_and_shares(
            votes, weights, variance_floor, with_distances
        )

        def gradient(*upstream):
            return _backward(votes, weights, shares, outputs, upstream)

        return outputs, gradient

    return moments(votes, weights)


def _backward(votes, weights, shares, outputs, upstream):
    """`(d votes, d weights)` from the outputs' gradients.

    With `D_i = (V_i - mu)^2`, `r = 1 / sigma^2` and upstream gradients
    `g_total, g_mu, g_var, g_dist`:

    ```none
    G      = g_var - r^2 sum_i g_dist_i D_i    (sigma^2's whole gradient)
    g_D_i  = s_i G + g_dist_i r
    g_mu'  = g_mu - 2 r sum_i g_dist_i (V_i - mu)
    g_V_i  = 2 (V_i - mu) g_D_i + s_i g_mu'
    g_s_i  = V_i . g_mu' + D_i . G
    g_w_i  = (g_s_i - sum_k s_k g_s_k) / sum_k w_k + g_total
    ```

    (`g_mu'` drops `-2 G sum_i s_i (V_i - mu)`, which is 0; a parent
    with no weight, `sum_k w_k = 0`, has `s = w`.) `V - mu` and `D` are
    recomputed from the votes rather than kept from the forward pass.
    """
    total, means, variances = outputs[:3]
    d_total, d_means, d_variances = _upstream(outputs, upstream)
    deviations = votes - means[..., None, :]
    squared_deviations = ops.square(deviations)
    inverse = 1.0 / variances
    d_distances = upstream[3] if len(outputs) == 4 else None
    if d_distances is None:
        d_squared = shares[..., None] * (2.0 * d_variances)[..., None, :]
    else:
        d_rows = d_distances[..., None, :]  # (b, P, J, 1, I)
        d_means, d_variances = _through_distances(
            d_means,
            d_variances,
            d_rows,
            squared_deviations,
            inverse,
            ops.matmul(d_rows, deviations)[..., 0, :],
        )
        # 2 g_D_i for every i at once: (I, 2) @ (2, h) per parent.
        d_squared = ops.matmul(
            ops.stack([shares, d_distances], axis=-1),
            ops.stack([2.0 * d_variances, 2.0 * inverse], axis=-2),
        )
    d_votes = deviations * d_squared + (
        shares[..., None] * d_means[..., None, :]
    )
    d_weights = _weights_gradient(
        votes, shares, squared_deviations, total, d_total, d_means, d_variances
    )
    return d_votes, ops.cast(d_weights, weights.dtype)


def _upstream(outputs, upstream):
    """`(g_total, g_mu, g_var)`, zeros where an output had no gradient."""
    return tuple(
        ops.zeros_like(output) if gradient is None else gradient
        for output, gradient in zip(outputs[:3], upstream[:3])
    )


def _through_distances(
    d_means, d_variances, d_rows, squared_deviations, inverse, pulled
):
    """`(g_mu', G)`: the means' and variances' whole gradients, with the
    part that reaches them through the squared distances, given `pulled`
    `= sum_i g_dist_i (V_i - mu)`."""
    d_variances = (
        d_variances
        - ops.square(inverse)
        * (ops.matmul(d_rows, squared_deviations)[..., 0, :])
    )
    return d_means - 2.0 * inverse * pulled, d_variances


def _weights_gradient(
    votes, shares, squared_deviations, total, d_total, d_means, d_variances
):
    """`g_w` from `g_mu'` and `G` (see `_backward`)."""
    d_shares = (
        ops.matmul(votes, d_means[..., None])[..., 0]
        + ops.matmul(squared_deviations, d_variances[..., None])[..., 0]
    )
    d_scale = ops.where(total > 0, ops.sum(d_shares * shares, axis=-1), 0.0)
    return (d_shares - d_scale[..., None]) / nonzero(total)[
        ..., None
    ] + d_total[..., None]


def _moments_through_probe(
    votes, weights, variance_floor, with_distances, probe
):
    """`weighted_moments` whose votes' gradient goes to `probe`."""
    # The gradient reaches the votes through the probe alone.
    votes = tf.stop_gradient(votes)

    @tf.custom_gradient
    def moments(weights, left, right):
        outputs, shares = moments_and_shares(
            votes, weights, variance_floor, with_distances
        )

        def gradient(*upstream):
            total, means, variances = outputs[:3]
            d_total, d_means, d_variances = _upstream(outputs, upstream)
            squared_deviations = ops.square(votes - means[..., None, :])
            inverse = 1.0 / variances
            d_distances = upstream[3] if len(outputs) == 4 else None
            if d_distances is None:
                d_distances = ops.zeros_like(shares)
                inverse = ops.zeros_like(inverse)
            else:
                # sum_i g_dist_i (V_i - mu), without writing V - mu out.
                pulled = (
                    ops.matmul(d_distances[..., None, :], votes)[..., 0, :]
                    - ops.sum(d_distances, axis=-1)[..., None] * means
                )
                d_means, d_variances = _through_distances(
                    d_means,
                    d_variances,
                    d_distances[..., None, :],
                    squared_deviations,
                    inverse,
                    pulled,
                )
            d_left = ops.stack([shares, d_distances], axis=-1)
            d_right = ops.stack(
                [2.0 * d_variances, 2.0 * inverse, d_means, means], axis=-2
            )
            d_weights = _weights_gradient(
                votes,
                shares,
                squared_deviations,
                total,
                d_total,
                d_means,
                d_variances,
            )
            return ops.cast(d_weights, weights.dtype), d_left, d_right

        return outputs, gradient

    return moments(weights, *probe)
