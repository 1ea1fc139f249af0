"""The steps of EM routing (Hinton, Sabour, Frosst 2018, Procedure 1):
the M-step, the E-step's log-densities, and the iterations on votes
grouped by parent position that the dense and the convolutional routing
share."""

import math

import keras
import numpy as np
from keras import ops

from keras_capsules.ops.compilation import compiled_by_xla, written_once
from keras_capsules.ops.em_activation_cost import ActivationCost
from keras_capsules.ops.em_moments import nonzero, weighted_moments
from keras_capsules.ops.fast_paths import fast_path

# Added to the variance of the costs across parents before its square
# root, when costs are standardised: parents of equal cost stay finite.
_COST_VARIANCE_EPSILON = 1e-6


def _standardize(cost):
    """z-scores of `(batch, P, J)` costs across the J parent types."""
    mean = ops.mean(cost, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(cost - mean), axis=-1, keepdims=True)
    return (cost - mean) / ops.sqrt(variance + _COST_VARIANCE_EPSILON)


def _cost_less_common_part(beta_u, variances, total, cost_options):
    """`(batch, P, J)` costs less a part common to the J parent types at
    each position, which their z-scores do not see, formed without that
    part: in float32 the costs are often far larger than their spread
    across the types (variances near the floor make every `log sigma`
    nearly equal), and subtracting their mean from them would leave
    rounding error of the spread's size.

    With `r^h` the types' mean variance and `beta` their mean `beta_u`,
    each `sum_h (beta_u + log sigma^h)` is `S + d_j`: `S = sum_h (beta +
    1/2 log r^h)` common, `d_j = sum_h (beta_u_j - beta + 1/2 log(
    sigma_j^h^2 / r^h))` small (a ratio near 1 keeps its rounding near
    float32's epsilon; ONNX has no log1p). The cost `(S + d_j) T_j` (`T_j =
    sum_i R_ij`) less the common `S mean_k T_k` is `S (T_j - mean_k T_k)
    + d_j T_j`; per mass, the cost less `S` is `d_j`."""
    tiny = np.finfo(keras.backend.standardize_dtype(variances.dtype)).tiny
    reference = ops.maximum(ops.mean(variances, axis=2, keepdims=True), tiny)
    mean_beta_u = ops.mean(beta_u)
    # (batch, P, 1): S; (batch, P, J): d_j.
    common = ops.sum(mean_beta_u + 0.5 * ops.log(reference), axis=-1)
    deviation = ops.sum(
        (beta_u - mean_beta_u)[:, None] + 0.5 * ops.log(variances / reference),
        axis=-1,
    )
    if cost_options.cost_per_mass:
        cost = deviation
    else:
        mean_total = ops.mean(total, axis=-1, keepdims=True)
        cost = common * (total - mean_total) + deviation * total
    return cost * cost_options.cost_scale


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
            votes' gradient (TensorFlow's `gradient_probes`).

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
    if cost_options.standardize_costs:
        cost = _standardize(
            _cost_less_common_part(beta_u, variances, total, cost_options)
        )
    else:
        # cost^h = (beta_u + log sigma^h) sum_i R_ij, summed over h.
        cost = ops.sum(beta_u[:, None] + 0.5 * ops.log(variances), axis=-1)
        if not cost_options.cost_per_mass:
            cost = cost * total
        cost = cost * cost_options.cost_scale
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
    cost_options=None,
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
        cost_options: an `ActivationCost`; None for Procedure 1 as
            written.
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
    cost_options = cost_options or ActivationCost()
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
    probes = [None] * num_iterations
    if compiled_by_xla():  # TensorFlow's (backend/tensorflow/).
        probes = fast_path("gradient_probes")(votes, num_iterations)
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
