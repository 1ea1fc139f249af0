"""Procedure 1 of Hinton, Sabour, Frosst (2018) in NumPy, written from the
paper for one example and any child-to-parent incidence: the reference of
both the dense and the convolutional EM routing tests."""

import math

import numpy as np


def log_logistic(x):
    return -np.logaddexp(0.0, -x)


def em_reference(votes, activations, incidence, beta_u, beta_a, lambdas):
    """EM routing of one example, float64, no variance floor.

    Args:
        votes: `(n_child, n_parent, h)`; entries outside `incidence` unused.
        activations: `(n_child,)`.
        incidence: bool `(n_child, n_parent)`, True where the parent's
            receptive field holds the child (all True when dense).
        beta_u, beta_a: `(n_parent,)`.
        lambdas: the inverse temperature of each iteration.

    Returns:
        `(a (n_parent,), mu (n_parent, h), sigma2 (n_parent, h))`.
    """
    votes = np.asarray(votes, np.float64)
    n_child, n_parent, h = votes.shape
    # Line 2: each child's assignment is uniform over its parents.
    r = incidence / incidence.sum(axis=1, keepdims=True)
    logit = np.zeros(n_parent)
    mu = np.zeros((n_parent, h))
    sigma2 = np.zeros((n_parent, h))
    for t, lam in enumerate(lambdas):
        for j in range(n_parent):  # M-step for one parent
            children = np.flatnonzero(incidence[:, j])
            rj = r[children, j] * activations[children]
            total = rj.sum()
            v = votes[children, j]
            mu[j] = (rj[:, None] * v).sum(axis=0) / total
            sigma2[j] = (rj[:, None] * (v - mu[j]) ** 2).sum(axis=0) / total
            cost = (beta_u[j] + np.log(np.sqrt(sigma2[j]))) * total
            logit[j] = lam * (beta_a[j] - cost.sum())  # a_j = logistic(.)
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
