"""Capsule regression inference against NumPy versions of eqs. 16-19 and a
Monte Carlo estimate of the integrals (10) and (11)."""

import mpmath
import numpy as np
from absl.testing import absltest
from keras import ops

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, numpy, value_and_gradients


def lambda_reference(beta, s):
    """I_s(beta) by quadrature of eq. 31 (independent of the library)."""
    with mpmath.workdps(30):
        b = mpmath.mpf(beta)
        return float(
            b * mpmath.quad(lambda r: r**s * mpmath.exp(-(1 - r) * b), [0, 1])
        )


def probabilities_reference(means):
    """Eq. 16, loop by loop, for one example's `(m, d)` prior means."""
    m, d = means.shape
    lengths = [float(np.dot(v, v)) for v in means]
    total = sum(lengths)
    lambda_0 = lambda_reference(total / 2.0, d * m / 2.0)
    return np.array(
        [lambda_0 * lengths[j] / total + (1 - lambda_0) / m for j in range(m)]
    )


def posterior_means_reference(means, label):
    """Eqs. 18-19, loop by loop, for one example."""
    m, d = means.shape
    lengths = [float(np.dot(v, v)) for v in means]
    total = sum(lengths)
    lambda_1 = lambda_reference(total / 2.0, d * m / 2.0 + 1.0)
    p = probabilities_reference(means)[label]
    result = np.zeros_like(means)
    for i in range(m):
        delta = 1.0 if i == label else 0.0
        q = lambda_1 * lengths[label] / total + (1 - lambda_1) * (
            2 * delta + d
        ) / (2 + d * m)
        result[i] = q / p * means[i]
    return result


def monte_carlo(means, label, samples, seed):
    """Estimates eqs. 10 and 11 by sampling h ~ N(W x, I)."""
    rng = np.random.default_rng(seed)
    h = means[None] + rng.standard_normal((samples,) + means.shape)
    squared = np.sum(h**2, axis=-1)
    share = squared[:, label] / squared.sum(-1)  # P(y = label | h), eq. 3
    probability = share.mean()
    posterior = (share[:, None, None] * h).mean(0) / probability
    return probability, posterior, share.std() / np.sqrt(samples)


class CapsuleRegressionOpsTest(TestCase):
    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(0)
        self.means = rng.normal(0.0, 1.0, (5, 4, 3))
        self.means[1] *= 0.05  # Near-uniform regime.
        self.means[2] *= 30.0  # Nearly deterministic regime.
        self.labels = np.array([0, 3, 2, 1, 0])

    def test_probabilities_match_eq_16(self):
        actual = numpy(capsule_ops.capsule_regression_probabilities(self.means))
        expected = np.stack([probabilities_reference(v) for v in self.means])
        self.assertAllClose(actual, expected, rtol=1e-10, atol=0.0)
        self.assertAllClose(actual.sum(-1), np.ones(5), rtol=1e-12)

    def test_posterior_means_match_eqs_18_19(self):
        actual = numpy(
            capsule_ops.capsule_regression_posterior_means(
                self.means, self.labels
            )
        )
        expected = np.stack(
            [
                posterior_means_reference(v, y)
                for v, y in zip(self.means, self.labels)
            ]
        )
        self.assertAllClose(actual, expected, rtol=1e-9, atol=1e-12)

    def test_posterior_means_average_to_prior_means(self):
        # sum_j P(y = j | x) E[h_i | x, y = j] = W_i x (section 2.2).
        means = self.means
        probabilities = numpy(
            capsule_ops.capsule_regression_probabilities(means)
        )
        total = 0.0
        for j in range(4):
            posterior = capsule_ops.capsule_regression_posterior_means(
                means, np.full([5], j)
            )
            total += probabilities[:, j, None, None] * numpy(posterior)
        self.assertAllClose(total, self.means, rtol=1e-10, atol=1e-12)

    def test_matches_monte_carlo_of_eqs_10_11(self):
        means = np.array([[1.2, -0.4], [0.3, 0.9], [-0.5, -0.2]])
        probabilities = numpy(
            capsule_ops.capsule_regression_probabilities(means)
        )
        for label in range(3):
            p_mc, posterior_mc, stderr = monte_carlo(
                means, label, 400_000, seed=label
            )
            self.assertLess(abs(probabilities[label] - p_mc), 5 * stderr)
            posterior = numpy(
                capsule_ops.capsule_regression_posterior_means(
                    means, np.asarray(label)
                )
            )
            self.assertAllClose(posterior, posterior_mc, atol=0.02)

    def test_argmax_is_longest_capsule(self):
        probabilities = numpy(
            capsule_ops.capsule_regression_probabilities(self.means)
        )
        lengths = np.linalg.norm(self.means, axis=-1)
        self.assertAllEqual(
            np.argmax(probabilities, -1), np.argmax(lengths, -1)
        )

    def test_zero_input_is_uniform_with_finite_gradients(self):
        means = np.zeros((2, 4, 3), "float32")

        def log_first_probability(means):
            probabilities = capsule_ops.capsule_regression_probabilities(means)
            return ops.log(probabilities[:, 0])

        def posterior(means):
            return capsule_ops.capsule_regression_posterior_means(
                means, np.array([0, 1])
            )

        self.assertAllClose(
            capsule_ops.capsule_regression_probabilities(means),
            np.full((2, 4), 0.25),
        )
        self.assertAllEqual(posterior(means), np.zeros((2, 4, 3)))
        for target in (log_first_probability, posterior):
            _, (gradient,) = value_and_gradients(target, [means])
            self.assertTrue(np.all(np.isfinite(numpy(gradient))))

    def test_finite_for_huge_and_single_capsule_inputs(self):
        means = np.zeros((3, 4, 2), np.float32)
        means[0] = 1e15  # beta ~ 1e31
        means[1, 2] = 1e4  # One capsule carries everything.
        means[2, 0, 0] = 1e-20  # beta underflows.
        labels = np.array([1, 0, 3])

        def loss(means):
            probabilities = capsule_ops.capsule_regression_probabilities(means)
            chosen = ops.take_along_axis(probabilities, labels[:, None], 1)
            return -ops.sum(ops.log(chosen))

        probabilities = capsule_ops.capsule_regression_probabilities(means)
        posterior = capsule_ops.capsule_regression_posterior_means(
            means, labels
        )
        _, (gradient,) = value_and_gradients(loss, [means])
        for value in (probabilities, posterior, gradient):
            self.assertTrue(np.all(np.isfinite(numpy(value))))
        self.assertAllClose(ops.sum(probabilities, -1), np.ones(3))

    def test_bad_shape_raises(self):
        with self.assertRaisesRegex(ValueError, r"shape \(\.\.\., m, d\)"):
            capsule_ops.capsule_regression_probabilities(np.zeros((4,)))


class SquashTest(TestCase):
    def test_squash_matches_sabour_eq_1(self):
        vectors = np.random.default_rng(1).normal(size=(6, 5))
        norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
        expected = norms**2 / (1 + norms**2) * vectors / norms
        self.assertAllClose(capsule_ops.squash(vectors), expected, rtol=1e-6)

    def test_zero_vector_has_finite_gradient(self):
        x = np.zeros((2, 3), "float32")
        _, (gradient,) = value_and_gradients(
            lambda x: (
                ops.sum(capsule_ops.squash(x))
                + ops.sum(capsule_ops.safe_norm(x))
            ),
            [x],
        )
        self.assertTrue(np.all(np.isfinite(numpy(gradient))))
        self.assertAllEqual(capsule_ops.squash(x), np.zeros((2, 3)))


if __name__ == "__main__":
    absltest.main()
