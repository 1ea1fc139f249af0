"""Heinsen routing of linear votes, without forming the votes.

When every input capsule votes through the same weights, `V[i, j] =
x[i] W[j] + B[j]`, every sum Algorithm 1 takes over the votes is a sum over
weighted moments of the inputs: the M-step needs `sum_i D[i, j] x[i]` and
`sum_i D[i, j] x[i] x[i]^T`, and the E-step's Gaussian log-density is a
quadratic form in `x[i]`. All of them are matrix products of `(batch,
n_in, n_out)` shares with `(batch, n_in, d_cov d_in^2)` moments, so the
`(batch, n_in, n_out, d_cov, d_out)` vote tensor never exists. Same
results as `heinsen_routing` on the formed votes (tested), at a fraction
of the memory traffic.
"""

import math

from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops import heinsen_steps as steps
from keras_capsules.ops.arguments import check_num_iterations, check_rank


def _check(scores, capsules, kernel, num_iterations):
    name = "heinsen_routing_linear"
    check_rank(name, "capsules", capsules, "(batch, n_in, d_cov, d_in)")
    check_rank(name, "scores", scores, "(batch, n_in)")
    if len(kernel.shape) != 3 or kernel.shape[1] != capsules.shape[-1]:
        raise ValueError(
            "`heinsen_routing_linear` expects a kernel of shape (n_out, "
            f"d_in, d_out) with d_in = {capsules.shape[-1]}. Received shape "
            f"{tuple(kernel.shape)}."
        )
    check_num_iterations("heinsen_routing_linear", num_iterations)


def heinsen_routing_linear(
    scores,
    capsules,
    kernel,
    bias,
    beta_use,
    beta_ign,
    num_iterations=3,
    mask=None,
    output_mask=None,
    epsilon=steps.DEFAULT_EPSILON,
):
    """`heinsen_routing` of the votes `V[i, j, c, h] = sum_d x[i, c, d]
    W[j, d, h] + B[j, c, h]`, computed from moments of the inputs.

    ```none
    paper              code                     shape
    mu_inp[i, c, d]    capsules, x              (batch, n_in, d_cov, d_in)
    W[j, d, h]         kernel                   (n_out, d_in, d_out)
    B[j, c, h]         bias                     broadcasts to (batch, n_out,
                                                d_cov, d_out)
    ```

    With shares `D = D_use` and totals `T[j] = sum_i D[i, j]` (lines
    12-18 of Algorithm 1): means `mu[j] = m[j] W[j] + B[j]` with `m[j] =
    sum_i D[i, j] x[i] / T[j]`; variances `sigma2[j, c, h] = sum_de W[j, d,
    h] S[j, c, d, e] W[j, e, h]` with `S[j, c] = sum_i D[i, j] (x[i, c] -
    m[j, c]) (x[i, c] - m[j, c])^T / T[j]`; and the E-step's (lines 6-8)
    `sum_ch (V - mu)^2 / sigma2 = x^T Q x - 2 x.q + r` with `Q[j, c] =
    W[j] diag(1 / sigma2[j, c]) W[j]^T`. Inputs are first centred on their
    presence-weighted mean (the bias absorbs the shift), which keeps the
    moment differences well conditioned in float32.

    Args:
        scores: float `(batch, n_in)` input logits.
        capsules: float `(batch, n_in, d_cov, d_in)`.
        kernel: float `(n_out, d_in, d_out)`.
        bias: float, broadcastable to `(batch, n_out, d_cov, d_out)`.
        beta_use, beta_ign: float `(n_out,)` (or `(1,)`).
        num_iterations: int >= 1.
        mask: optional bool `(batch, n_in)`, True for inputs that take part.
        output_mask: optional bool `(batch, n_out)`, True for outputs that
            take part.
        epsilon: positive float, as in `heinsen_routing` (1e-5).

    Returns:
        `(scores, means, variances)` as `heinsen_routing`.

    Examples:

        >>> rng = np.random.default_rng(0)
        >>> scores, means, variances = heinsen_routing_linear(
        ...     np.zeros((2, 6)), rng.normal(size=(2, 6, 4, 4)),
        ...     rng.normal(size=(3, 4, 4)), np.zeros((3, 4, 4)), np.zeros(3),
        ...     np.zeros(3))
        >>> tuple(scores.shape), tuple(means.shape)
        ((2, 3), (2, 3, 4, 4))
    """
    scores = ops.convert_to_tensor(scores)
    capsules = ops.convert_to_tensor(capsules)
    kernel = ops.convert_to_tensor(kernel)
    _check(scores, capsules, kernel, num_iterations)
    steps.check_epsilon("heinsen_routing_linear", epsilon)
    dtype = capsules.dtype
    kernel = ops.cast(kernel, dtype)
    bias = ops.cast(bias, dtype)
    beta_use = ops.cast(beta_use, dtype)
    beta_ign = ops.cast(beta_ign, dtype)
    batch, num_inputs = ops.shape(capsules)[0], ops.shape(capsules)[1]
    d_cov, d_in = capsules.shape[2], capsules.shape[3]
    num_outputs = kernel.shape[0] or ops.shape(kernel)[0]

    presence = steps.input_presence(scores, mask, dtype)  # f(a_inp), (b, i, 1)
    # Centre the inputs; the shift moves into the bias.
    centre = ops.sum(presence[..., None] * capsules, axis=1) / (
        ops.sum(presence, axis=1)[:, :, None] + epsilon
    )  # (b, c, d)
    x = capsules - centre[:, None]
    bias = bias + ops.einsum("bcd,jdh->bjch", centre, kernel)
    flat_x = ops.reshape(x, (batch, num_inputs, d_cov * d_in))
    outer = ops.reshape(
        x[..., :, None] * x[..., None, :],
        (batch, num_inputs, d_cov * d_in * d_in),
    )  # x x^T per input and row c, flattened

    present = steps.output_presence(output_mask, batch, num_outputs, dtype)
    log_two_pi = math.log(2.0 * math.pi)
    output_scores = means = variances = None
    for iteration in range(num_iterations):
        # E-step (lines 3-10).
        if iteration == 0:
            routing = steps.first_responsibility(present, num_inputs)
        else:
            precision = 1.0 / variances  # (b, j, c, h)
            centred_means = means - bias  # m W, (b, j, c, h)
            weighted_kernel = (
                precision[:, :, :, None, :] * kernel[None, :, None, :, :]
            )  # (b, j, c, d, h): W[j] diag(1 / sigma2[j, c])
            q_matrix = ops.einsum("bjcdh,jeh->bjcde", weighted_kernel, kernel)
            q_vector = ops.einsum(
                "bjcdh,bjch->bjcd", weighted_kernel, centred_means
            )
            constant = ops.sum(
                ops.square(centred_means) * precision
                - ops.log(precision)
                + log_two_pi,
                axis=(-2, -1),
            )  # (b, j)
            distance = dtype_keeping.matmul(
                outer,
                ops.transpose(
                    ops.reshape(q_matrix, (batch, num_outputs, -1)),
                    (0, 2, 1),
                ),
            ) - 2.0 * dtype_keeping.matmul(
                flat_x,
                ops.transpose(
                    ops.reshape(q_vector, (batch, num_outputs, -1)),
                    (0, 2, 1),
                ),
            )  # (b, i, j)
            log_likelihood = -0.5 * (distance + constant[:, None, :])
            routing = steps.responsibility(
                output_scores, log_likelihood, present, output_mask is not None
            )
        # D-step (lines 11-14) and output scores (line 16).
        use, output_scores = steps.shares_and_scores(
            presence, routing, beta_use, beta_ign
        )
        # M-step means and variances (lines 17-18), from input moments.
        total_use = ops.sum(use, axis=1)[:, :, None]  # (b, j, 1)
        shares = ops.transpose(use, (0, 2, 1)) / (total_use + epsilon)
        # The shares sum to s = T / (T + epsilon), as in `heinsen_routing`.
        # With f = sum_i w x, the votes' weighted spread about their mean
        # mu = f W + s B is W^T (sum_i w x x^T - (2 - s) f f^T) W
        # + (1 - s)^2 B (2 f W + s B): exact for every s, so outputs that
        # get (almost) no input agree with the formed votes too.
        share_sum = (total_use / (total_use + epsilon))[..., None]
        first = ops.reshape(
            dtype_keeping.matmul(shares, flat_x),
            (batch, num_outputs, d_cov, d_in),
        )  # sum_i w x
        second = ops.reshape(
            dtype_keeping.matmul(shares, outer),
            (batch, num_outputs, d_cov, d_in, d_in),
        )  # sum_i w x x^T
        spread = second - (2.0 - share_sum[..., None]) * (
            first[..., :, None] * first[..., None, :]
        )
        mapped_first = ops.einsum("bjcd,jdh->bjch", first, kernel)  # f W
        means = mapped_first + share_sum * bias
        bias_terms = ops.square(1.0 - share_sum) * (
            bias * (2.0 * mapped_first + share_sum * bias)
        )
        variances = (
            dtype_keeping.maximum(
                ops.einsum(
                    "bjcdh,jdh->bjch",
                    ops.einsum("bjcde,jeh->bjcdh", spread, kernel),
                    kernel,
                )
                + bias_terms,
                0.0,
            )
            + epsilon
        )
    return output_scores, means, variances
