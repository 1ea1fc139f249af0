"""Variational Bayes routing (Ribeiro, Leontidis, Kollias, AAAI 2020):
a Gaussian mixture over the votes with conjugate priors, fitted by
variational Bayes."""

import math

import keras
import numpy as np
from keras import ops

from keras_capsules.ops import dtype_keeping
from keras_capsules.ops.arguments import (
    check_broadcastable,
    check_num_iterations,
    check_rank,
    check_shape,
    routing_tensor,
)
from keras_capsules.ops.digamma import digamma
from keras_capsules.ops.log_domain import masked_log

# The priors of the authors' models (Dirichlet alpha_0 = 1 over the
# mixing proportions; Normal-Wishart over each parent's mean and diagonal
# precision: m_0 = 0, kappa_0 = 1, Psi_0 = I, nu_0 = D + 1).
PRIOR_CONCENTRATION = 1.0  # alpha_0
PRIOR_MEAN_PRECISION = 1.0  # kappa_0
PRIOR_SCALE = 1.0  # the diagonal of Psi_0^-1 (and of Psi_0)
PRIOR_EXTRA_DEGREES = 1.0  # nu_0 - D


def variational_bayes_routing(
    votes, activations, beta_u, beta_a, num_iterations=3, mask=None
):
    """Routes votes to parents by variational Bayes (Ribeiro et al. 2020).

    ```none
    paper          code                shape
    V[i, j]        votes               (batch, n_in, n_out, D)
    a_i            activations         (batch, n_in), in [0, 1]
    r[i, j]        responsibility      (batch, n_in, n_out); 1 / n_out first
    R_j            total               sum_i a_i r[i, j]
    alpha_j        concentration       alpha_0 + R_j      (Dirichlet)
    kappa_j        mean_precision      kappa_0 + R_j      (Normal-Wishart)
    nu_j           degrees             nu_0 + R_j
    mu_j           vote_mean           sum_i a_i r[i, j] V[i, j] / R_j
    m_j            means               (kappa_0 m_0 + R_j mu_j) / kappa_j
    Psi_j^-1       inverse_scale       Psi_0^-1 + sum_i a_i r[i, j]
                                       (V - mu_j)^2 + kappa_0 R_j /
                                       kappa_j (mu_j - m_0)^2  (diagonal)
    E[ln pi_j]     log_proportion      psi(alpha_j) - psi(sum_j alpha_j)
    E[ln|L_j|]     log_det_precision   sum_{d=1}^{D} psi((nu_j + 1 - d)
                                       / 2) + D ln 2 + ln|Psi_j|
    ln rho[i, j]   -                   E[ln pi_j] + E[ln|L_j|] / 2 - D/2
                                       ln 2 pi - (D / kappa_j + nu_j
                                       sum_d (V - m_j)^2 Psi_j) / 2
    H[q_j]         entropy             D/2 ln(2 pi e) - E[ln|L_j|] / 2
    logit_j        logits              beta_a - (pi_j H[q_j] + beta_u),
                                       pi_j = exp(E[ln pi_j])
    ```

    Each iteration updates the parents' posteriors (the M-step-like
    update of the paper's Algorithm 1), then, except after the last,
    the responsibilities `r[i, j] = softmax_j(ln rho[i, j])`. Weights are
    kept as logs (the authors exponentiate and normalise, and divide by
    at least 1e-11 where every likelihood underflows, which this does
    not need). The
    precisions are diagonal, as in the authors' experiments, and the
    priors theirs (`PRIOR_*` in this module). A parent's activation is
    `sigmoid(logit_j)`: its weighted negative entropy, as in the authors'
    code, which batch-normalises the logits before the sigmoid (a model
    does that after the layer). A masked input capsule (`mask[b, i]`
    False) counts as `a_i = 0`, so it changes no output.

    Args:
        votes: float `(batch, n_in, n_out, D)` (float16 and bfloat16 route
            in float32; integers in `keras.config.floatx()`).
        activations: float `(batch, n_in)`, input activations in [0, 1].
        beta_u: float, broadcastable to `(n_out,)`: the learned offset of
            the entropy.
        beta_a: float, broadcastable to `(n_out,)`: the learned offset of
            the logits.
        num_iterations: int >= 1, routing iterations. Defaults to 3.
        mask: optional bool `(batch, n_in)`, True for the input capsules
            that take part.

    Returns:
        `(logits, means)`: `(batch, n_out)` logits and `(batch, n_out, D)`
        posterior means `m_j`, in the votes' dtype.

    Examples:

        >>> votes = np.random.default_rng(0).normal(size=(2, 32, 5, 16))
        >>> logits, means = variational_bayes_routing(
        ...     votes, np.full((2, 32), 0.5), 0.0, 0.0)
        >>> tuple(logits.shape), tuple(means.shape)
        ((2, 5), (2, 5, 16))
    """
    name = "variational_bayes_routing"
    votes, dtype = routing_tensor(name, "votes", votes)
    check_rank(name, "votes", votes, "(batch, n_in, n_out, D)")
    check_num_iterations(name, num_iterations)
    batch, num_inputs, num_outputs, dim = votes.shape
    activations = ops.cast(
        check_shape(name, "activations", activations, (batch, num_inputs)),
        votes.dtype,
    )
    dtype_name = keras.backend.standardize_dtype(votes.dtype)
    # log a_i, held above log(smallest normal) where a_i = 0; a masked
    # input gets a log-weight that exp takes to 0.
    log_weight = ops.log(
        dtype_keeping.maximum(activations, float(np.finfo(dtype_name).tiny))
    )
    if mask is not None:
        check_shape(name, "mask", mask, (batch, num_inputs))
        log_weight = ops.where(mask, log_weight, masked_log(dtype_name))
    beta_u, beta_a = (
        ops.cast(
            check_broadcastable(name, label, beta, (num_outputs,)), votes.dtype
        )
        for label, beta in (("beta_u", beta_u), ("beta_a", beta_a))
    )
    log_responsibility = ops.full_like(votes[..., 0], -math.log(num_outputs))
    for iteration in range(num_iterations):
        posterior = _parent_posteriors(
            votes, log_weight[:, :, None] + log_responsibility
        )
        if iteration + 1 < num_iterations:
            log_responsibility = ops.log_softmax(
                _log_rho(votes, posterior, dim), axis=-1
            )
    log_det_precision = _expected_log_det_precision(posterior, dim)
    entropy = 0.5 * dim * math.log(2 * math.pi * math.e) - 0.5 * (
        log_det_precision
    )
    proportion = ops.exp(_expected_log_proportion(posterior))
    logits = beta_a - (proportion * entropy + beta_u)
    return ops.cast(logits, dtype), ops.cast(posterior["means"], dtype)


def _parent_posteriors(votes, log_weighted_responsibility):
    """The parameters of each parent's posterior, from `log(a_i r[i, j])`
    (`(b, i, j)`): a dict of `(b, j)` totals and concentrations and `(b,
    j, D)` means and inverse scales.

    The weights of `mu_j`, `a_i r[i, j] / R_j`, are a softmax over the
    inputs: no quotient of tiny numbers, whose gradient would overflow.
    """
    total = ops.exp(ops.logsumexp(log_weighted_responsibility, axis=1))  # R_j
    normalized = ops.softmax(log_weighted_responsibility, axis=1)  # (b, i, j)
    vote_mean = ops.einsum("bij,bijd->bjd", normalized, votes)  # mu_j
    spread = total[..., None] * ops.einsum(
        "bij,bijd->bjd", normalized, ops.square(votes - vote_mean[:, None])
    )
    mean_precision = PRIOR_MEAN_PRECISION + total  # kappa_j
    # m_0 = 0: m_j = R_j mu_j / kappa_j.
    means = (total / mean_precision)[..., None] * vote_mean
    inverse_scale = (
        PRIOR_SCALE
        + spread
        + (PRIOR_MEAN_PRECISION * total / mean_precision)[..., None]
        * ops.square(vote_mean)
    )
    return {
        "total": total,
        "concentration": PRIOR_CONCENTRATION + total,  # alpha_j
        "mean_precision": mean_precision,
        "extra_degrees": PRIOR_EXTRA_DEGREES + total,  # nu_j - D
        "means": means,
        "inverse_scale": inverse_scale,
    }


def _expected_log_proportion(posterior):
    """`E[ln pi_j] = psi(alpha_j) - psi(sum_j alpha_j)`, `(b, j)`."""
    concentration = posterior["concentration"]
    return digamma(concentration) - digamma(
        ops.sum(concentration, axis=-1, keepdims=True)
    )


def _expected_log_det_precision(posterior, dim):
    """`E[ln|Lambda_j|] = sum_{d=1}^{D} psi((nu_j + 1 - d) / 2) + D ln 2 +
    ln|Psi_j|`, `(b, j)`, with `nu_j = D + extra_degrees`."""
    degrees = posterior["extra_degrees"][..., None] + dim  # (b, j, 1)
    steps = ops.cast(ops.arange(dim), degrees.dtype)  # d - 1
    digammas = ops.sum(digamma(0.5 * (degrees - steps)), axis=-1)
    log_det_scale = -ops.sum(ops.log(posterior["inverse_scale"]), axis=-1)
    return digammas + dim * math.log(2.0) + log_det_scale


def _log_rho(votes, posterior, dim):
    """`ln rho[i, j]`, the unnormalised log-responsibilities, `(b, i, j)`."""
    degrees = posterior["extra_degrees"] + dim  # nu_j, (b, j)
    squared_distance = ops.sum(
        ops.square(votes - posterior["means"][:, None])
        / posterior["inverse_scale"][:, None],
        axis=-1,
    )  # (b, i, j)
    expected_quadratic = (
        dim / posterior["mean_precision"][:, None]
        + degrees[:, None] * squared_distance
    )
    return (
        _expected_log_proportion(posterior)[:, None]
        + 0.5 * _expected_log_det_precision(posterior, dim)[:, None]
        - 0.5 * dim * math.log(2 * math.pi)
        - 0.5 * expected_quadratic
    )
