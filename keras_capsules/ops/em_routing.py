"""EM routing of matrix capsules (Hinton, Sabour, Frosst 2018, Procedure 1)."""

import math

from keras import ops

# Added to every variance sigma^2: identical votes (zero variance) keep a
# finite log-density and cost. Far below the variance of routed votes, so
# results agree with the exact formulas to float32 precision.
VARIANCE_FLOOR = 1e-9
# Added to sum_i R_ij before dividing by it: a parent that no active child
# votes for (all a_i = 0) gets mean 0 and variance 0, not NaN.
_TOTAL_EPSILON = 1e-9


def check_inverse_temperatures(op_name, inverse_temperatures):
    """Returns the number of iterations: the length of the schedule."""
    count = (
        inverse_temperatures.shape[0]
        if hasattr(inverse_temperatures, "shape")
        else len(inverse_temperatures)
    )
    if not isinstance(count, int) or count < 1:
        raise ValueError(
            f"`{op_name}` expects `inverse_temperatures` to hold one value "
            "per routing iteration (at least one, e.g. `[1.0, 2.0, 3.0]` "
            f"for 3 iterations). Received: {inverse_temperatures!r}."
        )
    return count


def m_step(votes, weights, beta_u, beta_a, inverse_temperature):
    """The M-step for every parent at once (Procedure 1, M-step lines 3-6).

    Args:
        votes: `(batch, P, I, J, h)`: P parent positions, I children per
            position, J parent types.
        weights: `(batch, P, I, J)`, `R_ij a_i`.
        beta_u, beta_a: `(J,)`.
        inverse_temperature: scalar `lambda`.

    Returns:
        `(logits (batch, P, J), means, variances (batch, P, J, h))`, where
        `a_j = logistic(logits)`.
    """
    total = ops.sum(weights, axis=2)  # (b, P, J): sum_i R_ij
    shares = weights / (total[:, :, None] + _TOTAL_EPSILON)
    means = ops.einsum("bpij,bpijh->bpjh", shares, votes)
    # Two passes, sum_i R_ij (V - mu)^2, not E[V^2] - mu^2: assignments
    # that settle on one tight cluster make the variance tiny, and the
    # moment form would cancel away every digit of it in float32.
    variances = ops.einsum(
        "bpij,bpijh->bpjh", shares, ops.square(votes - means[:, :, None])
    )
    variances = variances + VARIANCE_FLOOR
    # cost^h = (beta_u + log sigma^h) sum_i R_ij
    cost = (beta_u[:, None] + 0.5 * ops.log(variances)) * total[..., None]
    logits = inverse_temperature * (beta_a - ops.sum(cost, axis=-1))
    return logits, means, variances


def log_densities(votes, means, variances):
    """`log p_j` of every vote: `sum_h log N(V_ij^h; mu_j^h, sigma_j^h^2)`
    (E-step line 2), `(batch, P, I, J)`."""
    squared_distances = ops.einsum(
        "bpijh,bpjh->bpij",
        ops.square(votes - means[:, :, None]),
        1.0 / variances,
    )
    constant = ops.sum(ops.log(variances), axis=-1) + votes.shape[
        -1
    ] * math.log(2.0 * math.pi)
    return -0.5 * (squared_distances + constant[:, :, None])


def em_routing_on_patches(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    log_normalizer,
    trace=None,
):
    """Procedure 1 on votes grouped by parent position.

    The dense and the convolutional routing differ only in which parents
    share a child, so both call this with their own `log_normalizer`.

    Args:
        votes: `(batch, P, I, J, h)`.
        activations: `(batch, P, I)`, `a_i` of each child in each patch
            (0 for masked children).
        beta_u, beta_a: `(J,)`.
        inverse_temperatures: `(iterations,)` tensor, one `lambda` per
            iteration.
        log_normalizer: maps `(batch, P, I, J)` logits `l_ij` to
            `(batch, P, I, 1)`: the log of `sum_k exp(l_ik)` over all
            parents `k` of the child in that slot.
        trace: optional list; each iteration appends its assignments
            `R_ij` `(batch, P, I, J)` and the means `(batch, P, J, h)` of
            its M-step.

    Returns:
        `(logits (batch, P, J), means, variances (batch, P, J, h))`.
    """
    # Votes relative to each parent's activation-weighted mean: routing is
    # unchanged by a per-parent shift, and float32 then keeps the digits of
    # the spread when the votes sit far from 0.
    offset = ops.einsum("bpi,bpijh->bpjh", activations, votes) / (
        ops.sum(activations, axis=2)[:, :, None, None] + _TOTAL_EPSILON
    )
    votes = votes - offset[:, :, None]
    # R_ij = 1 / (number of parents of child i), Procedure 1 line 2.
    zeros = ops.zeros_like(votes[..., 0])
    routing = ops.exp(zeros - log_normalizer(zeros))
    num_iterations = inverse_temperatures.shape[0]
    for iteration in range(num_iterations):
        logits, means, variances = m_step(
            votes,
            routing * activations[..., None],
            beta_u,
            beta_a,
            inverse_temperatures[iteration],
        )
        if trace is not None:
            trace.append((routing, means + offset))
        if iteration + 1 < num_iterations:
            # E-step: R_ij = a_j p_j / sum_k a_k p_k, in the log domain.
            scores = ops.log_sigmoid(logits)[:, :, None] + log_densities(
                votes, means, variances
            )
            routing = ops.exp(scores - log_normalizer(scores))
    return logits, means + offset, variances


def _check(votes, activations):
    if votes.ndim != 4:
        raise ValueError(
            "`em_routing` expects votes of shape (batch, n_in, n_out, h). "
            f"Received shape {tuple(votes.shape)}."
        )
    if activations.ndim != 2:
        raise ValueError(
            "`em_routing` expects activations of shape (batch, n_in). "
            f"Received shape {tuple(activations.shape)}."
        )


def _dense_routing(
    votes, activations, beta_u, beta_a, inverse_temperatures, mask, trace
):
    """`em_routing` with an optional trace (see `em_routing_on_patches`)."""
    votes = ops.convert_to_tensor(votes)
    activations = ops.convert_to_tensor(activations)
    _check(votes, activations)
    check_inverse_temperatures("em_routing", inverse_temperatures)
    dtype = votes.dtype
    activations = ops.cast(activations, dtype)
    if mask is not None:
        activations = activations * ops.cast(mask, dtype)

    def over_outputs(logits):
        return ops.logsumexp(logits, axis=-1, keepdims=True)

    logits, means, variances = em_routing_on_patches(
        votes[:, None],
        activations[:, None],
        ops.cast(beta_u, dtype),
        ops.cast(beta_a, dtype),
        ops.cast(inverse_temperatures, dtype),
        over_outputs,
        trace,
    )
    return ops.sigmoid(logits[:, 0]), means[:, 0], variances[:, 0]


def em_routing_trace(
    votes, activations, beta_u, beta_a, inverse_temperatures, mask=None
):
    """Runs `em_routing` and returns, for each iteration, its assignments
    `R_ij` `(batch, n_in, n_out)` and means `(batch, n_out, h)`: what the
    paper's Fig. 2 plots (vote distances to the means, weighted by `R`)."""
    trace = []
    _dense_routing(
        votes, activations, beta_u, beta_a, inverse_temperatures, mask, trace
    )
    return [(routing[:, 0], means[:, 0]) for routing, means in trace]


def em_routing(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    mask=None,
):
    """Routes votes with EM (Hinton, Sabour, Frosst 2018, Procedure 1).

    ```none
    paper        code                  shape
    V_ij^h       votes                 (batch, n_in, n_out, h)
    a_i          activations           (batch, n_in), in [0, 1]
    beta_u       beta_u                (n_out,)
    beta_a       beta_a                (n_out,)
    lambda       inverse_temperatures  (iterations,)
    R_ij         routing               (batch, n_in, n_out)
    a_j          output activations    (batch, n_out)
    mu_j^h       means                 (batch, n_out, h)
    sigma_j^h^2  variances             (batch, n_out, h)
    ```

    `R_ij = 1 / n_out`; then each iteration runs the M-step,
    `mu_j = sum_i R_ij a_i V_ij / sum_i R_ij a_i`, the weighted variance,
    `cost^h = (beta_u + log sigma^h) sum_i R_ij a_i` and
    `a_j = logistic(lambda (beta_a - sum_h cost^h))`, and, except after the
    last iteration, the E-step `R_ij = a_j p_j / sum_k a_k p_k` with
    `p_j = prod_h N(V_ij^h; mu_j^h, sigma_j^h^2)`, computed in the log
    domain. Variances carry `VARIANCE_FLOOR`. A masked input (`mask`
    False) acts as activation 0: it changes no output.

    Args:
        votes: float `(batch, n_in, n_out, h)`.
        activations: float `(batch, n_in)` input activations in `[0, 1]`.
        beta_u: float `(n_out,)`.
        beta_a: float `(n_out,)`.
        inverse_temperatures: floats, one `lambda` per iteration; their
            number is the number of iterations.
        mask: optional bool `(batch, n_in)`, True for inputs that take part.

    Returns:
        `(activations, means, variances)`: `(batch, n_out)` activations in
        `[0, 1]` and `(batch, n_out, h)` means and variances.
    """
    return _dense_routing(
        votes, activations, beta_u, beta_a, inverse_temperatures, mask, None
    )
