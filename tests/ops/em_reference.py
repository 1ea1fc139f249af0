"""Procedure 1 of Hinton, Sabour, Frosst (2018) in NumPy, written from the
paper for one example and any child-to-parent incidence: the reference of
both the dense and the convolutional EM routing tests."""

import math

import numpy as np


def log_logistic(x):
    return -np.logaddexp(0.0, -x)


# The z-score of costs divides by sqrt(variance + this), as the op does.
COST_VARIANCE_EPSILON = 1e-6


def em_reference(
    votes,
    activations,
    incidence,
    beta_u,
    beta_a,
    lambdas,
    bias_gain=1.0,
    cost_scale=1.0,
    cost_per_mass=False,
    standardize_groups=None,
    variance_floor=0.0,
    assignment_smoothing=0.0,
):
    """EM routing of one example, float64; by default without variance
    floor and with the activation of Procedure 1 as written.

    Args:
        votes: `(n_child, n_parent, h)`; entries outside `incidence` unused.
        activations: `(n_child,)`.
        incidence: bool `(n_child, n_parent)`, True where the parent's
            receptive field holds the child (all True when dense).
        beta_u, beta_a: `(n_parent,)`.
        lambdas: the inverse temperature of each iteration.
        bias_gain: `g` in `a_j = logistic(lambda (g beta_a - F cost_j))`.
        cost_scale: `F` there.
        cost_per_mass: drop the factor `sum_i R_ij` from the cost.
        standardize_groups: optional int `(n_parent,)`: when given, each
            `F cost_j` is replaced by its z-score among the parents of its
            group (the parent types at one position).
        variance_floor: added to every `sigma^2`.
        assignment_smoothing: `eps`; every M-step after the first weighs
            child i by `(1 - eps) R_ij + eps R0_ij` (R0 the uniform first
            assignment) instead of `R_ij`.

    Returns:
        `(a (n_parent,), mu (n_parent, h), sigma2 (n_parent, h))`.
    """
    votes = np.asarray(votes, np.float64)
    n_child, n_parent, h = votes.shape
    # Line 2: each child's assignment is uniform over its parents.
    r0 = incidence / incidence.sum(axis=1, keepdims=True)
    r = r0.copy()
    costs = np.zeros(n_parent)
    mu = np.zeros((n_parent, h))
    sigma2 = np.zeros((n_parent, h))
    for t, lam in enumerate(lambdas):
        for j in range(n_parent):  # M-step for one parent
            children = np.flatnonzero(incidence[:, j])
            share = r[children, j]
            if t > 0:
                share = (1 - assignment_smoothing) * share + (
                    assignment_smoothing * r0[children, j]
                )
            rj = share * activations[children]
            total = rj.sum()
            v = votes[children, j]
            mu[j] = (rj[:, None] * v).sum(axis=0) / total
            sigma2[j] = (rj[:, None] * (v - mu[j]) ** 2).sum(
                axis=0
            ) / total + variance_floor
            mass = 1.0 if cost_per_mass else total
            cost = (beta_u[j] + np.log(np.sqrt(sigma2[j]))) * mass
            costs[j] = cost_scale * cost.sum()
        if standardize_groups is not None:
            for group in np.unique(standardize_groups):
                members = standardize_groups == group
                spread = np.sqrt(costs[members].var() + COST_VARIANCE_EPSILON)
                costs[members] = (costs[members] - costs[members].mean()) / (
                    spread
                )
        logit = lam * (bias_gain * beta_a - costs)  # a_j = logistic(logit)
        if t == len(lambdas) - 1:
            break
        for i in range(n_child):  # E-step for one child
            terms = np.full(n_parent, -np.inf)
            for j in np.flatnonzero(incidence[i]):
                log_p = np.sum(
                    -0.5 * np.log(2 * math.pi * sigma2[j])
                    - (votes[i, j] - mu[j]) ** 2 / (2 * sigma2[j])
                )
                terms[j] = log_logistic(logit[j]) + log_p  # log(a_j p_j)
            weights = np.exp(terms - terms.max())
            r[i] = weights / weights.sum()
    return 1.0 / (1.0 + np.exp(-logit)), mu, sigma2
