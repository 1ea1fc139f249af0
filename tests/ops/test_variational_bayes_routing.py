"""Variational Bayes routing against a loop-by-loop NumPy version of
Ribeiro et al. 2020 (on every Keras backend), and `ops.digamma`."""

import math

import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, numpy
from tests.ops import routing_checks


def digamma_reference(x):
    """psi(x) by Richardson-extrapolated central differences of
    `math.lgamma` (error about 1e-10 for x >= 1/2)."""

    def difference(h):
        return (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)

    return (4 * difference(5e-4) - difference(1e-3)) / 3


def routing_reference(
    votes, activations, beta_u, beta_a, num_iterations, mask=None
):
    """The paper's updates for one example, diagonal precisions, priors
    alpha_0 = 1, m_0 = 0, kappa_0 = 1, Psi_0 = I, nu_0 = D + 1."""
    n_in, n_out, dim = votes.shape
    a = activations * (np.ones(n_in) if mask is None else mask)
    r = np.full((n_in, n_out), 1.0 / n_out)
    for iteration in range(num_iterations):
        alpha, kappa, nu = np.zeros(n_out), np.zeros(n_out), np.zeros(n_out)
        m, inv_psi = np.zeros((n_out, dim)), np.zeros((n_out, dim))
        for j in range(n_out):
            total = sum(a[i] * r[i, j] for i in range(n_in))
            mu = sum(a[i] * r[i, j] * votes[i, j] for i in range(n_in))
            mu = mu / total if total > 0 else np.zeros(dim)
            spread = sum(
                a[i] * r[i, j] * (votes[i, j] - mu) ** 2 for i in range(n_in)
            )
            alpha[j], kappa[j], nu[j] = 1 + total, 1 + total, dim + 1 + total
            m[j] = total * mu / kappa[j]
            inv_psi[j] = 1 + spread + total / kappa[j] * mu**2
        e_log_pi = [
            digamma_reference(alpha[j]) - digamma_reference(alpha.sum())
            for j in range(n_out)
        ]
        e_log_lambda = [
            sum(
                digamma_reference((nu[j] + 1 - d) / 2)
                for d in range(1, dim + 1)
            )
            + dim * math.log(2)
            - np.log(inv_psi[j]).sum()
            for j in range(n_out)
        ]
        if iteration + 1 == num_iterations:
            break
        log_rho = np.zeros((n_in, n_out))
        for i in range(n_in):
            for j in range(n_out):
                quadratic = dim / kappa[j] + nu[j] * np.sum(
                    (votes[i, j] - m[j]) ** 2 / inv_psi[j]
                )
                log_rho[i, j] = (
                    e_log_pi[j]
                    + 0.5 * e_log_lambda[j]
                    - 0.5 * dim * math.log(2 * math.pi)
                    - 0.5 * quadratic
                )
        for i in range(n_in):
            exps = np.exp(log_rho[i] - log_rho[i].max())
            r[i] = exps / exps.sum()
    logits = np.zeros(n_out)
    for j in range(n_out):
        entropy = (
            0.5 * dim * math.log(2 * math.pi * math.e) - 0.5 * e_log_lambda[j]
        )
        logits[j] = beta_a[j] - (math.exp(e_log_pi[j]) * entropy + beta_u[j])
    return logits, m


def route(votes, mask, activations):
    return capsule_ops.variational_bayes_routing(
        votes, activations, 0.5, -0.5, num_iterations=3, mask=mask
    )


def _expected(votes, activations, beta_u, beta_a, num_iterations, mask=None):
    results = [
        routing_reference(
            votes[b],
            activations[b],
            beta_u,
            beta_a,
            num_iterations,
            None if mask is None else mask[b],
        )
        for b in range(len(votes))
    ]
    return np.array([r[0] for r in results]), np.array([r[1] for r in results])


class DigammaTest(TestCase):
    def test_matches_differences_of_log_gamma(self):
        x = np.array([0.5, 1.0, 1.5, 2.7, 7.9, 8.0, 31.0, 1e3])
        expected = [digamma_reference(t) for t in x]
        # The reference's own error: about 1e-10 relative (1e-9 at 1e3,
        # where lgamma's size costs digits).
        self.assertAllClose(capsule_ops.digamma(x), expected, rtol=2e-10)

    def test_known_values(self):
        euler = 0.5772156649015329
        self.assertAllClose(
            capsule_ops.digamma(np.array([1.0, 0.5, 2.0])),
            [-euler, -euler - 2 * math.log(2), 1 - euler],
            atol=1e-13,
        )


class VariationalBayesRoutingTest(TestCase):
    def test_matches_reference_float64(self):
        votes = routing_checks.random((2, 7, 4, 5), seed=0, scale=0.8)
        activations = np.random.default_rng(1).uniform(size=(2, 7))
        beta_u, beta_a = routing_checks.random((2, 4), seed=2)
        for num_iterations in (1, 2, 3):
            logits, means = capsule_ops.variational_bayes_routing(
                votes, activations, beta_u, beta_a, num_iterations
            )
            expected = _expected(
                votes, activations, beta_u, beta_a, num_iterations
            )
            # The reference's digamma errs by about 1e-10.
            self.assertAllClose(logits, expected[0], atol=1e-8, rtol=1e-8)
            self.assertAllClose(means, expected[1], atol=1e-8, rtol=1e-8)

    def test_matches_reference_float32(self):
        votes = routing_checks.random((2, 9, 3, 16), seed=3, scale=0.5)
        activations = np.random.default_rng(4).uniform(size=(2, 9))
        logits, means = capsule_ops.variational_bayes_routing(
            votes.astype("float32"), activations.astype("float32"), 0.0, 0.0
        )
        self.assertDTypeEqual(logits, "float32")
        expected = _expected(votes, activations, np.zeros(3), np.zeros(3), 3)
        # Logits of size ~10 from sums of 16 log-terms: float32 rounding.
        self.assertAllClose(logits, expected[0], atol=1e-4, rtol=1e-5)
        self.assertAllClose(means, expected[1], atol=1e-5, rtol=1e-5)

    def test_matches_reference_with_mask(self):
        votes = routing_checks.random((2, 6, 3, 4), seed=5)
        activations = np.random.default_rng(6).uniform(size=(2, 6))
        mask = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 0, 1, 0, 0]], bool)
        logits, means = route(votes, mask, activations)
        expected = _expected(
            votes, activations, np.full(3, 0.5), np.full(3, -0.5), 3, mask
        )
        self.assertAllClose(logits, expected[0], atol=1e-8, rtol=1e-8)
        self.assertAllClose(means, expected[1], atol=1e-8, rtol=1e-8)

    def test_identical_votes_keep_a_finite_precision(self):
        # Zero spread: the Wishart prior keeps Psi_j^-1 >= 1, so EM's
        # variance collapse cannot happen; the means are the shrunk vote.
        votes = np.ones((1, 5, 2, 3))
        logits, means = route(votes, None, np.ones((1, 5)))
        total = 5 / 2  # R_j: the uniform responsibilities, all iterations
        self.assertAllClose(
            means[0], np.full((2, 3), total / (1 + total)), atol=1e-12
        )
        self.assertTrue(np.all(np.isfinite(numpy(logits))))

    def test_masked_inputs_change_nothing(self):
        activations = np.random.default_rng(7).uniform(size=(2, 6))
        routing_checks.assert_masked_inputs_change_nothing(
            self,
            route,
            routing_checks.random((2, 6, 3, 4), seed=8),
            activations,
        )

    def test_finite_at_hard_points(self):
        for activations in (np.ones((2, 4)), np.full((2, 4), 1e-30)):
            routing_checks.assert_finite_at_hard_points(
                self, route, (2, 4, 3, 5), activations
            )

    def test_compiled_matches_eager(self):
        activations = np.random.default_rng(9).uniform(size=(2, 5))
        routing_checks.assert_compiled_matches_eager(
            self,
            route,
            routing_checks.random((2, 5, 3, 4), seed=10),
            activations,
        )

    def test_bad_activations_are_refused(self):
        with self.assertRaisesRegex(ValueError, "`activations` of shape"):
            capsule_ops.variational_bayes_routing(
                np.zeros((1, 4, 3, 2)), np.ones((1, 3)), 0.0, 0.0
            )


if __name__ == "__main__":
    absltest.main()
