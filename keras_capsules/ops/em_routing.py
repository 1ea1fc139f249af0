"""EM routing of matrix capsules (Hinton, Sabour, Frosst 2018, Procedure 1)."""

from keras import ops

from keras_capsules.ops.arguments import check_rank, routing_tensor
from keras_capsules.ops.em_activation_cost import ActivationCost
from keras_capsules.ops.em_routing_inputs import routing_inputs
from keras_capsules.ops.em_steps import em_routing_on_patches


def _check(votes, activations):
    check_rank("em_routing", "votes", votes, "(batch, n_in, n_out, h)")
    check_rank("em_routing", "activations", activations, "(batch, n_in)")


def _dense_routing(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    mask,
    options,
    trace=None,
    return_logits=False,
):
    """`em_routing` with an optional trace (see `em_routing_on_patches`)."""
    votes, output_dtype = routing_tensor("em_routing", "votes", votes)
    activations = ops.convert_to_tensor(activations)
    _check(votes, activations)
    batch_size, n_in, n_out = tuple(votes.shape)[:3]
    activations, beta_u, beta_a, inverse_temperatures = routing_inputs(
        "em_routing",
        votes.dtype,
        activations,
        (batch_size, n_in),
        mask,
        (beta_u, beta_a, n_out),
        inverse_temperatures,
        options,
    )

    def over_outputs(logits):
        return ops.logsumexp(logits, axis=2, keepdims=True)

    logits, means, variances = em_routing_on_patches(
        ops.transpose(votes, (0, 2, 1, 3))[:, None],
        activations[:, None],
        beta_u,
        beta_a,
        inverse_temperatures,
        over_outputs,
        options,
        trace,
    )
    logits = logits[:, 0]
    activations = logits if return_logits else ops.sigmoid(logits)
    return tuple(
        ops.cast(tensor, output_dtype)
        for tensor in (activations, means[:, 0], variances[:, 0])
    )


def em_routing_trace(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    mask=None,
    cost=None,
):
    """Runs `em_routing` and returns, for each iteration, its assignments
    `R_ij` `(batch, n_in, n_out)` and means `(batch, n_out, h)`: what the
    paper's Fig. 2 plots (vote distances to the means, weighted by `R`).
    The arguments are `em_routing`'s.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 6, 3, 16))
        >>> trace = em_routing_trace(
        ...     votes, np.ones((2, 6)), np.zeros(3), np.zeros(3), [1.0, 2.0])
        >>> [(tuple(r.shape), tuple(m.shape)) for r, m in trace]
        [((2, 6, 3), (2, 3, 16)), ((2, 6, 3), (2, 3, 16))]
    """
    trace = []
    _dense_routing(
        votes,
        activations,
        beta_u,
        beta_a,
        inverse_temperatures,
        mask,
        cost or ActivationCost(),
        trace,
    )
    return [
        (ops.transpose(routing[:, 0], (0, 2, 1)), means[:, 0])
        for routing, means in trace
    ]


def em_routing(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    mask=None,
    cost=None,
    return_logits=False,
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
    domain. Variances carry `ActivationCost().variance_floor` (1e-9). A
    masked input (`mask` False) acts as activation 0: it changes no
    output.

    `cost`, an `ActivationCost`, changes how the cost becomes an
    activation; its defaults give Procedure 1 as written:
    `logit_j = lambda (activation_bias_gain beta_a - F cost_j)` with
    `F = cost_scale`, `cost_j` without its factor `sum_i R_ij` when
    `cost_per_mass`, standardised across the output capsules when
    `standardize_costs`, and `variance_floor` added to every `sigma^2`;
    `assignment_smoothing` `eps` weighs each M-step after the first by
    `(1 - eps) R_ij + eps / n_out` instead of `R_ij`.

    Args:
        votes: float `(batch, n_in, n_out, h)`.
        activations: float `(batch, n_in)` input activations in `[0, 1]`.
        beta_u: float `(n_out,)`.
        beta_a: float `(n_out,)`.
        inverse_temperatures: floats, one `lambda` per iteration; their
            number is the number of iterations.
        mask: optional bool `(batch, n_in)`, True for inputs that take part.
        cost: optional `ActivationCost`; None for Procedure 1 as written.
        return_logits: bool, return the activations' logits
            `logit_j` (`a_j = logistic(logit_j)`) instead of `a_j`, exact
            where `a_j` rounds to 0 or 1. Defaults to `False`.

    Returns:
        `(activations, means, variances)`: `(batch, n_out)` activations in
        `[0, 1]` (or their logits) and `(batch, n_out, h)` means and
        variances.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 6, 3, 16))
        >>> activations, means, variances = em_routing(
        ...     votes, np.ones((2, 6)), np.zeros(3), np.zeros(3),
        ...     [1.0, 2.0, 3.0])
        >>> tuple(means.shape)
        (2, 3, 16)
    """
    return _dense_routing(
        votes,
        activations,
        beta_u,
        beta_a,
        inverse_temperatures,
        mask,
        cost or ActivationCost(),
        return_logits=return_logits,
    )
