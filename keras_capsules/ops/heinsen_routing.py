"""Routing with E-, D- and M-steps (Heinsen 2019, Algorithm 1)."""

import math

from keras import ops

from keras_capsules.ops import heinsen_steps as steps
from keras_capsules.ops.arguments import (
    check_broadcastable,
    check_num_iterations,
    check_rank,
    check_shape,
    routing_tensor,
)
from keras_capsules.ops.compilation import compiled_by_xla, written_once
from keras_capsules.ops.small_matmul import small_matmul


def _check(scores, votes, num_iterations):
    layout = "(batch, n_in, n_out, d_cov, d_out)"
    check_rank("heinsen_routing", "votes", votes, layout)
    check_rank("heinsen_routing", "scores", scores, "(batch, n_in)")
    check_shape("heinsen_routing", "scores", scores, tuple(votes.shape)[:2])
    check_num_iterations("heinsen_routing", num_iterations)


def heinsen_routing(
    scores,
    votes,
    beta_use,
    beta_ign,
    num_iterations=3,
    mask=None,
    output_mask=None,
    epsilon=steps.DEFAULT_EPSILON,
):
    """Routes votes with E-, D- and M-steps (Heinsen 2019, Algorithm 1).

    ```none
    paper              code               shape
    a_inp[i]           scores             (batch, n_in), logits
    V[i, j, c, h]      votes              (batch, n_in, n_out, d_cov, d_out)
    beta_use, _ign     beta_use, beta_ign (n_in, n_out) or (n_out,)
    R[i, j]            responsibility     (batch, n_in, n_out)
    D_use, D_ign       use, ignore        (batch, n_in, n_out)
    a_out[j]           output scores      (batch, n_out), logits
    mu[j, c, h]        means              (batch, n_out, d_cov, d_out)
    sigma2[j, c, h]    variances          (batch, n_out, d_cov, d_out)
    f                  logistic
    ```

    Each iteration: E-step, `R = 1 / n_out` on the first iteration, else
    `log R[i, :] = log_softmax_j(log f(a_out) + log P[i, :])` with
    `log P[i, j] = sum_ch log N(V[i, j, c, h]; mu, sigma2)` (lines 4-8);
    D-step, `D_use = f(a_inp) R`, `D_ign = f(a_inp) - D_use` (12-13);
    M-step, `a_out = sum_i beta_use D_use - sum_i beta_ign D_ign` and the
    `D_use`-weighted mean and variance of the votes (16-18). A masked input
    (`mask[b, i]` False) acts as a score of minus infinity: `f = 0`, so it
    changes no output. As in the author's code, `epsilon` is added to the
    totals `sum_i D_use` before dividing by them and to the variances
    (the returned ones too), so identical votes and outputs that receive
    nothing stay finite.

    Args:
        scores: float `(batch, n_in)` input scores (pre-activation logits).
        votes: float `(batch, n_in, n_out, d_cov, d_out)`.
        beta_use: float `(n_in, n_out)`, or `(n_out,)` shared by all inputs.
        beta_ign: float, the same shape as `beta_use`.
        num_iterations: int >= 1. Defaults to 3.
        mask: optional bool `(batch, n_in)`, True for inputs that take part.
        output_mask: optional bool `(batch, n_out)`, True for outputs that
            take part.
        epsilon: positive float, the stabiliser above. Defaults to 1e-5
            (the author's code).

    Returns:
        `(scores, means, variances)`: `(batch, n_out)` output logits and
        `(batch, n_out, d_cov, d_out)` means and variances.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 6, 3, 4, 4))
        >>> scores, means, variances = heinsen_routing(
        ...     np.zeros((2, 6)), votes, np.zeros(3), np.zeros(3))
        >>> tuple(scores.shape), tuple(means.shape)
        ((2, 3), (2, 3, 4, 4))
    """
    votes, output_dtype = routing_tensor("heinsen_routing", "votes", votes)
    scores = ops.convert_to_tensor(scores)
    _check(scores, votes, num_iterations)
    steps.check_epsilon("heinsen_routing", epsilon)
    batch_size, n_in, n_out = tuple(votes.shape)[:3]
    for name, beta in (("beta_use", beta_use), ("beta_ign", beta_ign)):
        check_broadcastable("heinsen_routing", name, beta, (n_in, n_out))
    if mask is not None:
        check_shape("heinsen_routing", "mask", mask, (batch_size, n_in))
    if output_mask is not None:
        check_shape(
            "heinsen_routing", "output_mask", output_mask, (batch_size, n_out)
        )
    dtype = votes.dtype
    beta_use = ops.cast(beta_use, dtype)
    beta_ign = ops.cast(beta_ign, dtype)
    presence = steps.input_presence(scores, mask, dtype)  # (b, i, 1)
    batch = ops.shape(votes)[0]
    present = steps.output_presence(output_mask, batch, votes.shape[2], dtype)
    d_cov, d_out = votes.shape[3:]
    # Under XLA, narrow capsules (c h < 8, e.g. SST's 1x2) route faster as
    # fused multiply-and-sum over the inputs of (b, i, j, c, h) votes:
    # XLA:CPU runs the (b, j) tiny products of the other form slowly
    # (0.65x at 740 inputs -> 64 outputs of 1x2, `bench/routing.py`).
    route = (
        _iterate_over_input_axis
        if compiled_by_xla() and d_cov * d_out < 8
        else _iterate_as_products
    )
    output_scores, means, variances = route(
        votes,
        presence,
        present,
        beta_use,
        beta_ign,
        num_iterations,
        output_mask is not None,
        epsilon,
    )
    return tuple(
        ops.cast(tensor, output_dtype)
        for tensor in (output_scores, means, variances)
    )


def _iterate_as_products(
    votes,
    presence,
    present,
    beta_use,
    beta_ign,
    num_iterations,
    masked_outputs,
    epsilon,
):
    """The iterations with the votes laid out `(b, j, i, c h)`: every sum
    over the inputs is a batched matrix-vector product over contiguous
    memory, no product of a weight with the votes is written out, and
    each M-step's `(V - mu)^2` serves the E-step that follows."""
    batch, num_inputs, num_outputs, d_cov, d_out = (
        ops.shape(votes)[0],
        ops.shape(votes)[1],
        *votes.shape[2:],
    )
    # Written once under XLA, not recomputed (through the transpose)
    # inside every fusion that reads them.
    votes = written_once(
        ops.reshape(
            ops.transpose(votes, (0, 2, 1, 3, 4)),
            (batch, num_outputs, num_inputs, d_cov * d_out),
        )
    )
    log_two_pi = math.log(2.0 * math.pi)
    output_scores = means = variances = squared_deviations = None
    for iteration in range(num_iterations):
        # E-step (lines 3-10).
        if iteration == 0:
            routing = steps.first_responsibility(present, num_inputs)
        else:
            # The last M-step's (V - mu)^2, divided by sigma2 and summed.
            distances = small_matmul(
                squared_deviations, (1.0 / variances)[..., None]
            )[..., 0]
            normalizer = ops.sum(ops.log(variances), axis=-1) + (
                d_cov * d_out * log_two_pi
            )
            log_likelihood = -0.5 * (distances + normalizer[..., None])
            routing = steps.responsibility(
                output_scores,
                ops.transpose(log_likelihood, (0, 2, 1)),  # (b, i, j)
                present,
                masked_outputs,
            )
        # D-step (lines 11-14) and output scores (line 16).
        use, output_scores = steps.shares_and_scores(
            presence, routing, beta_use, beta_ign
        )
        # M-step means and variances (lines 17-18), two passes: a parent
        # that settles on one tight cluster keeps its small variance.
        # (b, j, 1, i); expand_dims, not a new-axis slice: LiteRT's builtin
        # ops take no new-axis slice of unknown size.
        weights = ops.expand_dims(ops.transpose(use, (0, 2, 1)), 2)
        total_use = ops.sum(use, axis=1)[:, :, None] + epsilon
        means = small_matmul(weights, votes)[:, :, 0] / total_use
        squared_deviations = ops.square(votes - means[:, :, None, :])
        variances = (
            small_matmul(weights, squared_deviations)[:, :, 0] / total_use
            + epsilon
        )
    shape = (batch, num_outputs, d_cov, d_out)
    return (
        output_scores,
        ops.reshape(means, shape),
        ops.reshape(variances, shape),
    )


def _iterate_over_input_axis(
    votes,
    presence,
    present,
    beta_use,
    beta_ign,
    num_iterations,
    masked_outputs,
    epsilon,
):
    """The iterations on `(b, i, j, c, h)` votes, every sum a
    multiply-and-sum over the input axis (which XLA fuses)."""
    num_inputs = ops.shape(votes)[1]
    log_two_pi = math.log(2.0 * math.pi)
    output_scores = means = variances = None
    for iteration in range(num_iterations):
        # E-step (lines 3-10).
        if iteration == 0:
            routing = steps.first_responsibility(present, num_inputs)
        else:
            log_density = -0.5 * (
                ops.square(votes - means[:, None]) / variances[:, None]
                + ops.log(variances)[:, None]
                + log_two_pi
            )
            log_likelihood = ops.sum(log_density, axis=(-2, -1))  # (b, i, j)
            routing = steps.responsibility(
                output_scores, log_likelihood, present, masked_outputs
            )
        # D-step (lines 11-14) and output scores (line 16).
        use, output_scores = steps.shares_and_scores(
            presence, routing, beta_use, beta_ign
        )
        # M-step means and variances (lines 17-18).
        total_use = ops.sum(use, axis=1)[:, :, None, None] + epsilon
        weights = use[:, :, :, None, None]  # (b, i, j, 1, 1)
        means = ops.sum(weights * votes, axis=1) / total_use
        variances = (
            ops.sum(weights * ops.square(votes - means[:, None]), axis=1)
            / total_use
            + epsilon
        )
    return output_scores, means, variances
