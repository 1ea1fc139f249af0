"""EM routing of matrix capsules (Hinton, Sabour, Frosst 2018, Procedure 1)."""

import dataclasses
import math
import numbers

from keras import ops

from keras_capsules.ops import labels as value_checks
from keras_capsules.ops.arguments import (
    check_broadcastable,
    check_shape,
    routing_tensor,
)
from keras_capsules.ops.compilation import compiled_by_xla, written_once
from keras_capsules.ops.em_moments import (
    gradient_probes,
    nonzero,
    weighted_moments,
)

# Added to every variance sigma^2 by default: identical votes (zero
# variance) keep a finite log-density and cost. Far below the variance of
# routed votes, so results agree with the exact formulas to float32
# precision. The official code uses 5e-4 (`variance_floor`).
VARIANCE_FLOOR = 1e-9
# Added to the variance of the costs across parents before its square
# root, when costs are standardised: parents of equal cost stay finite.
_COST_VARIANCE_EPSILON = 1e-6


@dataclasses.dataclass(frozen=True)
class ActivationCost:
    """How the M-step weighs the votes and turns a parent's cost into its
    activation logit.

    The defaults are Procedure 1 as written:
    `logit_j = lambda (beta_a - sum_h cost^h)` with
    `cost^h = (beta_u + log sigma^h) sum_i R_ij` and `sigma^2` carrying
    `VARIANCE_FLOOR`. The other values are what public implementations
    changed so that the logit has a useful scale:

    - `activation_bias_gain` `g`: `logit_j = lambda (g beta_a - cost_j)`;
      the official code's `5000` lets an optimiser move the bias at a
      useful rate when `lambda` is small.
    - `cost_scale` `F`: `cost_j` multiplied by `F` (e.g. one over the
      number of children per parent, so that layers of different widths
      give costs of one scale).
    - `cost_per_mass`: `cost_j = sum_h (beta_u + log sigma^h)`, without
      the factor `sum_i R_ij`: a parent's activation then rewards how
      tightly its children agree, not how many it has collected (routing
      that concentrates children cannot by itself turn a parent on).
    - `standardize_costs`: `cost_j` replaced by its z-score across the
      parent types at one position, `(cost_j - mean_k cost_k) / std_k
      cost_k`, so the logits have unit spread whatever the layer.
    - `variance_floor`: added to every `sigma^2`.
    - `assignment_smoothing` `eps`: every M-step weighs the votes by
      `(1 - eps) R_ij + eps R0_ij` instead of `R_ij`, where `R0_ij` is the
      uniform assignment of Procedure 1's line 2. The parent's mean and
      variance are then those of its votes pooled with `eps / (1 - eps)`
      times the weights of the first iteration: its first Gaussian acts
      as a conjugate prior, the usual cure for EM components that
      collapse. A parent keeps every child with at least `eps` of its
      uniform share, so it cannot shrink onto one child (whose vote would
      then have a density that grows as the variance falls to the floor,
      and claim the child completely in the next E-step;
      research/matrix_capsules.md). `0` is Procedure 1.
    """

    activation_bias_gain: float = 1.0
    cost_scale: float = 1.0
    cost_per_mass: bool = False
    standardize_costs: bool = False
    variance_floor: float = VARIANCE_FLOOR
    assignment_smoothing: float = 0.0

    def check(self, op_name):
        """Returns self; raises a ValueError naming `op_name` for a value
        out of range."""
        for name in ("activation_bias_gain", "cost_scale", "variance_floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (
                isinstance(value, numbers.Real) and value > 0
            ):
                raise ValueError(
                    f"`{op_name}` expects `{name}` to be a number > 0. "
                    f"Received: {value!r}."
                )
        smoothing = self.assignment_smoothing
        if isinstance(smoothing, bool) or not (
            isinstance(smoothing, numbers.Real) and 0 <= smoothing < 1
        ):
            raise ValueError(
                f"`{op_name}` expects `assignment_smoothing` to be a number "
                f"in [0, 1) (0 for Procedure 1). Received: {smoothing!r}."
            )
        return self


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


def _standardize(cost):
    """z-scores of `(batch, P, J)` costs across the J parent types."""
    mean = ops.mean(cost, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(cost - mean), axis=-1, keepdims=True)
    return (cost - mean) / ops.sqrt(variance + _COST_VARIANCE_EPSILON)


def m_step(
    votes,
    weights,
    beta_u,
    beta_a,
    inverse_temperature,
    cost_options,
    with_distances,
    gradient_probe=None,
):
    """The M-step for every parent at once (Procedure 1, M-step lines 3-6).

    Args:
        votes: `(batch, P, J, I, h)`: P parent positions, J parent types,
            I children per position.
        weights: `(batch, P, J, I)`, `R_ij a_i`.
        beta_u, beta_a: `(J,)`.
        inverse_temperature: scalar `lambda`.
        cost_options: an `ActivationCost`.
        with_distances: whether an E-step follows, which needs the votes'
            squared distances to the new means.
        gradient_probe: optional, where `weighted_moments` sends the
            votes' gradient (`em_moments.gradient_probes`).

    Returns:
        `(logits (batch, P, J), means, variances (batch, P, J, h),
        squared_distances (batch, P, J, I) or None)`, where `a_j =
        logistic(logits)` and `squared_distances` are `sum_h (V_ij^h -
        mu_j^h)^2 / (sigma_j^h)^2` (`em_moments.weighted_moments`).
    """
    total, means, variances, *distances = weighted_moments(
        votes,
        weights,
        cost_options.variance_floor,
        with_distances,
        gradient_probe,
    )
    # cost^h = (beta_u + log sigma^h) sum_i R_ij, summed over h.
    cost = ops.sum(beta_u[:, None] + 0.5 * ops.log(variances), axis=-1)
    if not cost_options.cost_per_mass:
        cost = cost * total
    cost = cost * cost_options.cost_scale
    if cost_options.standardize_costs:
        cost = _standardize(cost)
    logits = inverse_temperature * (
        cost_options.activation_bias_gain * beta_a - cost
    )
    return logits, means, variances, (distances or [None])[0]


def log_densities(squared_distances, variances):
    """`log p_j` of every vote: `sum_h log N(V_ij^h; mu_j^h, sigma_j^h^2)`
    (E-step line 2), `(batch, P, J, I)`, from the votes' squared distances
    `sum_h (V_ij^h - mu_j^h)^2 / (sigma_j^h)^2`."""
    constant = ops.sum(ops.log(variances), axis=-1) + variances.shape[
        -1
    ] * math.log(2.0 * math.pi)
    return -0.5 * (squared_distances + constant[..., None])


def em_routing_on_patches(
    votes,
    activations,
    beta_u,
    beta_a,
    inverse_temperatures,
    log_normalizer,
    cost_options=ActivationCost(),
    trace=None,
    offset=None,
):
    """Procedure 1 on votes grouped by parent position.

    The dense and the convolutional routing differ only in which parents
    share a child, so both call this with their own `log_normalizer`.
    Parent types come before children in `votes`, so every sum over the
    children of a parent is a product over contiguous axes.

    Args:
        votes: `(batch, P, J, I, h)`.
        activations: `(batch, P, I)`, `a_i` of each child in each patch
            (0 for masked children).
        beta_u, beta_a: `(J,)`.
        inverse_temperatures: `(iterations,)` tensor, one `lambda` per
            iteration.
        log_normalizer: maps `(n, P, J, I)` logits `l_ij`, for any
            number `n` of examples, to `(n, P, 1, I)`: the log of
            `sum_k exp(l_ik)` over all parents `k` of the child in that
            slot.
        cost_options: an `ActivationCost`.
        trace: optional list; each iteration appends its assignments
            `R_ij` `(batch, P, J, I)` (as the E-step gave them, before any
            smoothing) and the means `(batch, P, J, h)` of its M-step.
        offset: optional `(batch, P, J, h)`, each parent's
            activation-weighted mean vote `sum_i a_i V_ij / sum_i a_i` (0
            where every `a_i` is 0), when the caller can form it more
            cheaply than from the votes (`ConvMatrixCapsules` forms it from
            its patches and kernel). Any point near the votes gives the
            same results; this one is where float32 keeps their spread.

    Returns:
        `(logits (batch, P, J), means, variances (batch, P, J, h))`.
    """
    # Votes relative to each parent's activation-weighted mean: routing is
    # unchanged by a per-parent shift, and float32 then keeps the digits of
    # the spread when the votes sit far from 0.
    # The outputs do not depend on the offset, so neither do their
    # gradients: stopping it keeps 1 / sum_i a_i out of the backward pass.
    if offset is None:
        offset = (
            ops.einsum("bpi,bpjih->bpjh", activations, votes)
            / nonzero(ops.sum(activations, axis=-1))[:, :, None, None]
        )
    offset = ops.stop_gradient(offset)
    # Every M-step and E-step reads these: under XLA they are written
    # once, in this layout, rather than recomputed from the vote product
    # (through its transpose) inside each reading fusion.
    votes = written_once(votes - offset[..., None, :])
    num_iterations = inverse_temperatures.shape[0]
    # Under XLA the iterations' gradients reach the votes as factors, and
    # the votes' gradient is formed in one pass; centred votes keep the
    # float32 error of that expanded form at the plain form's.
    probes = (
        gradient_probes(votes, num_iterations)
        if compiled_by_xla()
        else [None] * num_iterations
    )
    # R_ij = 1 / (number of parents of child i), Procedure 1 line 2. It
    # is the same for every example, so it is formed for one: formed for
    # the whole batch, all of it constant, it cost XLA seconds of constant
    # folding in the convolutional layers.
    zeros = ops.zeros_like(votes[:1, ..., 0])
    uniform = ops.exp(zeros - log_normalizer(zeros))
    routing = uniform
    smoothing = cost_options.assignment_smoothing
    for iteration in range(num_iterations):
        weights = routing
        if iteration and smoothing:
            weights = (1.0 - smoothing) * routing + smoothing * uniform
        logits, means, variances, squared_distances = m_step(
            votes,
            weights * activations[:, :, None],
            beta_u,
            beta_a,
            inverse_temperatures[iteration],
            cost_options,
            with_distances=iteration + 1 < num_iterations,
            gradient_probe=probes[iteration],
        )
        if trace is not None:
            trace.append(
                (
                    ops.broadcast_to(routing, ops.shape(votes)[:-1]),
                    means + offset,
                )
            )
        if iteration + 1 < num_iterations:
            # E-step: R_ij = a_j p_j / sum_k a_k p_k, in the log domain.
            scores = ops.log_sigmoid(logits)[..., None] + log_densities(
                squared_distances, variances
            )
            routing = ops.exp(scores - log_normalizer(scores))
    return logits, means + offset, variances


def _check(votes, activations):
    if len(votes.shape) != 4:
        raise ValueError(
            "`em_routing` expects votes of shape (batch, n_in, n_out, h). "
            f"Received shape {tuple(votes.shape)}."
        )
    if len(activations.shape) != 2:
        raise ValueError(
            "`em_routing` expects activations of shape (batch, n_in). "
            f"Received shape {tuple(activations.shape)}."
        )


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


def routing_inputs(
    op_name,
    dtype,
    activations,
    activations_shape,
    mask,
    betas,
    inverse_temperatures,
    options,
):
    """Checks the inputs of an EM routing op besides its votes and returns
    `(activations, beta_u, beta_a, inverse_temperatures)` in `dtype`.

    `activations` must have `activations_shape` (as must `mask`, when
    given) and lie in [0, 1]; `betas` is `(beta_u, beta_a, n_out)`, each
    beta broadcastable to `(n_out,)`; the inverse temperatures must be
    positive and finite. Masked children (mask False) get activation 0,
    whatever they held.
    """
    check_inverse_temperatures(op_name, inverse_temperatures)
    options.check(op_name)
    check_shape(op_name, "activations", activations, activations_shape)
    beta_u, beta_a, n_out = betas
    for name, beta in (("beta_u", beta_u), ("beta_a", beta_a)):
        check_broadcastable(op_name, name, beta, (n_out,))
    activations = ops.cast(activations, dtype)
    if mask is not None:  # Padded children may hold anything.
        mask = check_shape(op_name, "mask", mask, activations_shape)
        activations = ops.where(ops.cast(mask, "bool"), activations, 0.0)
    activations = checked_activations(op_name, activations, dtype)
    inverse_temperatures = ops.convert_to_tensor(inverse_temperatures, dtype)
    inverse_temperatures = value_checks.checked(
        op_name,
        inverse_temperatures,
        inverse_temperatures,
        [
            (
                ops.all(ops.isfinite(inverse_temperatures))
                & ops.all(inverse_temperatures > 0),
                "positive finite inverse temperatures lambda",
            )
        ],
        what="inverse_temperatures",
    )
    return (
        activations,
        ops.cast(beta_u, dtype),
        ops.cast(beta_a, dtype),
        inverse_temperatures,
    )


def checked_activations(op_name, activations, dtype):
    """Child activations `a_i` in `dtype`, once they are in [0, 1] (a
    ValueError in eager mode, an assertion in a graph; compiled out under
    XLA)."""
    activations = ops.cast(activations, dtype)
    return value_checks.checked(
        op_name,
        activations,
        activations,
        [
            (
                ops.all((activations >= 0.0) & (activations <= 1.0)),
                "child activations a_i in [0, 1] (probabilities; pass "
                "logits through a sigmoid)",
            )
        ],
        what="activations",
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
    The arguments are `em_routing`'s."""
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
    domain. Variances carry `VARIANCE_FLOOR`. A masked input (`mask`
    False) acts as activation 0: it changes no output.

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

    Example:

    >>> votes = np.random.default_rng(0).normal(size=(2, 6, 3, 16))
    >>> activations, means, variances = em_routing(
    ...     votes, np.ones((2, 6)), np.zeros(3), np.zeros(3), [1.0, 2.0, 3.0])
    >>> means.shape
    TensorShape([2, 3, 16])
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
