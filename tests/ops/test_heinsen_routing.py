"""Heinsen routing against a loop-by-loop NumPy version of Algorithm 1."""

import math

import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import ops as capsule_ops
from tests.every_backend import (
    MODES,
    XLA_MODES,
    TestCase,
    numpy,
    run_in,
    value_and_gradients,
)


def logistic(x):
    return 1.0 / (1.0 + math.exp(-x))


# The stabiliser of the author's code (`eps`): added to the use totals
# before dividing by them and to the variances. The paper's text has none.
AUTHOR_EPSILON = 1e-5


def routing_reference(
    scores, votes, beta_use, beta_ign, iterations, mask, epsilon=AUTHOR_EPSILON
):
    """Algorithm 1 for one example, written from the paper with loops.

    scores (n_in,), votes (n_in, n_out, d_cov, d_out), betas (n_in, n_out);
    a masked input gets score -inf, so f(a) = 0.
    """
    n_in, n_out, d_cov, d_out = votes.shape
    f_in = [0.0 if not mask[i] else logistic(scores[i]) for i in range(n_in)]
    a_out = np.zeros(n_out)
    mu = np.zeros((n_out, d_cov, d_out))
    sigma2 = np.zeros((n_out, d_cov, d_out))
    for iteration in range(iterations):
        r = np.zeros((n_in, n_out))
        for i in range(n_in):
            if iteration == 0:
                r[i] = 1.0 / n_out
                continue
            log_terms = np.zeros(n_out)
            for j in range(n_out):
                log_p = 0.0
                for c in range(d_cov):
                    for h in range(d_out):
                        var = sigma2[j, c, h]
                        diff = votes[i, j, c, h] - mu[j, c, h]
                        log_p += -0.5 * math.log(2 * math.pi * var)
                        log_p -= diff**2 / (2 * var)
                log_terms[j] = math.log(logistic(a_out[j])) + log_p
            top = log_terms.max()
            r[i] = np.exp(log_terms - top) / np.exp(log_terms - top).sum()
        d_use = np.array(
            [[f_in[i] * r[i, j] for j in range(n_out)] for i in range(n_in)]
        )
        d_ign = np.array(
            [[f_in[i] - d_use[i, j] for j in range(n_out)] for i in range(n_in)]
        )
        for j in range(n_out):
            a_out[j] = sum(
                beta_use[i, j] * d_use[i, j] - beta_ign[i, j] * d_ign[i, j]
                for i in range(n_in)
            )
            total = d_use[:, j].sum() + epsilon
            mu[j] = sum(d_use[i, j] * votes[i, j] for i in range(n_in)) / total
            sigma2[j] = (
                sum(
                    d_use[i, j] * (votes[i, j] - mu[j]) ** 2
                    for i in range(n_in)
                )
                / total
                + epsilon
            )
    return a_out, mu, sigma2


def random_case(seed, batch=2, n_in=6, n_out=3, d_cov=2, d_out=3):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(batch, n_in))
    votes = rng.normal(size=(batch, n_in, n_out, d_cov, d_out))
    beta_use = rng.normal(size=(n_in, n_out))
    beta_ign = rng.normal(size=(n_in, n_out))
    return scores, votes, beta_use, beta_ign


def reference_batch(
    scores,
    votes,
    beta_use,
    beta_ign,
    iterations,
    mask=None,
    epsilon=AUTHOR_EPSILON,
):
    if mask is None:
        mask = np.ones(scores.shape, bool)
    outputs = [
        routing_reference(s, v, beta_use, beta_ign, iterations, m, epsilon)
        for s, v, m in zip(scores, votes, mask)
    ]
    return [np.stack(parts) for parts in zip(*outputs)]


class HeinsenRoutingTest(TestCase):
    @parameterized.named_parameters(
        ("one_iteration", 1), ("three_iterations", 3), ("four", 4)
    )
    def test_matches_reference_float64(self, iterations):
        case = random_case(iterations)
        routed = capsule_ops.heinsen_routing(*case, num_iterations=iterations)
        for got, expected in zip(routed, reference_batch(*case, iterations)):
            self.assertAllClose(got, expected, rtol=1e-5, atol=1e-5)

    @parameterized.named_parameters(("tiny", 1e-9), ("large", 0.1))
    def test_epsilon_is_the_authors_stabiliser(self, epsilon):
        case = random_case(13)
        routed = capsule_ops.heinsen_routing(*case, epsilon=epsilon)
        expected = reference_batch(*case, 3, epsilon=epsilon)
        for got, want in zip(routed, expected):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-5)
        # NumPy scalars are numbers too.
        self.assertAllClose(
            capsule_ops.heinsen_routing(*case, epsilon=np.float32(epsilon))[2],
            routed[2],
        )
        # The default is the author's 1e-5, which a large one is not.
        default = capsule_ops.heinsen_routing(*case)
        if epsilon > 1e-3:
            self.assertGreater(
                np.abs(numpy(default[2]) - numpy(routed[2])).max(), 1e-2
            )

    def test_rejects_a_bad_epsilon(self):
        case = random_case(14)
        for epsilon in (0.0, -1e-5, float("nan"), True, "1e-5"):
            with self.assertRaisesRegex(ValueError, "epsilon.*Received"):
                capsule_ops.heinsen_routing(*case, epsilon=epsilon)

    def test_matches_reference_float32(self):
        case = random_case(5)
        routed = capsule_ops.heinsen_routing(
            *[np.asarray(x, np.float32) for x in case]
        )
        for got, expected in zip(routed, reference_batch(*case, 3)):
            self.assertDTypeEqual(got, "float32")
            self.assertAllClose(got, expected, rtol=1e-3, atol=1e-3)

    def test_float32_keeps_the_variance_of_a_tight_cluster(self):
        # Every vote sits near 1 with spread 1e-3: float32 holds the
        # variances (~1e-7) only if they are summed as (V - mu)^2; as
        # E[V^2] - mu^2 the rounding of E[V^2] ~ 1 (6e-8) cancels them.
        scores, votes, beta_use, beta_ign = random_case(21)
        # The float32 votes, also given to the float64 reference: what is
        # compared is the routing's arithmetic, not the input's rounding.
        votes = (1.0 + 1e-3 * votes).astype(np.float32).astype(np.float64)
        case = (scores, votes, beta_use, beta_ign)
        expected = reference_batch(*case, 3, epsilon=1e-9)
        routed = capsule_ops.heinsen_routing(
            *[np.asarray(x, np.float32) for x in case], epsilon=1e-9
        )
        variances = numpy(routed[2])
        self.assertAllClose(variances, expected[2], rtol=1e-2, atol=1e-12)
        self.assertAllClose(routed[1], expected[1], rtol=1e-6)

    def test_matches_reference_with_mask_and_shared_betas(self):
        scores, votes, _, _ = random_case(6)
        beta_use, beta_ign = (
            np.array([0.5, -1.0, 2.0]),
            np.array([1.0, 0.0, -0.5]),
        )
        mask = np.array([[1, 1, 0, 1, 0, 1], [0, 1, 1, 1, 1, 1]], bool)
        routed = capsule_ops.heinsen_routing(
            scores, votes, beta_use, beta_ign, mask=mask
        )
        expected = reference_batch(
            scores,
            votes,
            np.tile(beta_use, (6, 1)),
            np.tile(beta_ign, (6, 1)),
            3,
            mask,
        )
        for got, want in zip(routed, expected):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-5)

    def test_padded_input_changes_no_output(self):
        scores, votes, _, _ = random_case(7)
        beta_use, beta_ign = np.ones(3), np.full(3, 0.5)
        mask = np.ones((2, 6), bool)
        mask[:, 4:] = False
        padded = capsule_ops.heinsen_routing(
            scores, votes, beta_use, beta_ign, mask=mask
        )
        trimmed = capsule_ops.heinsen_routing(
            scores[:, :4], votes[:, :4], beta_use, beta_ign
        )
        for got, want in zip(padded, trimmed):
            self.assertAllClose(got, want, atol=1e-12)

    @parameterized.named_parameters(
        ("identical_votes", True), ("one_input", False)
    )
    def test_gradients_are_finite(self, identical):
        scores, votes, beta_use, beta_ign = random_case(8)
        mask = None
        if identical:
            votes = np.ones_like(votes)
        else:
            mask = np.zeros((2, 6), bool)
            mask[:, 2] = True
        for dtype in ("float32", "float64"):
            routed, gradients = value_and_gradients(
                lambda *x: capsule_ops.heinsen_routing(*x, mask=mask),
                [
                    np.asarray(x, dtype)
                    for x in (scores, votes, beta_use, beta_ign)
                ],
            )
            for tensor in [*routed, *gradients]:
                self.assertTrue(np.all(np.isfinite(numpy(tensor))))

    def test_masked_outputs_are_as_if_absent(self):
        scores, votes, beta_use, beta_ign = random_case(11, n_out=5)
        output_mask = np.array(
            [[True, False, True, True, False], [False, True, True, True, True]]
        )
        routed = capsule_ops.heinsen_routing(
            scores, votes, beta_use, beta_ign, output_mask=output_mask
        )
        for b in range(2):
            kept = output_mask[b]
            expected = reference_batch(
                scores[b : b + 1],
                votes[b : b + 1][:, :, kept],
                beta_use[:, kept],
                beta_ign[:, kept],
                iterations=3,
            )
            for got, want in zip(routed, expected):
                self.assertAllClose(
                    np.asarray(got)[b : b + 1][:, kept],
                    want,
                    rtol=1e-5,
                    atol=1e-5,
                )

    def test_no_output_left_stays_finite(self):
        case = random_case(12)
        routed = capsule_ops.heinsen_routing(
            *case, output_mask=np.zeros((2, 3), bool)
        )
        for part in routed:
            self.assertTrue(np.all(np.isfinite(numpy(part))))

    @parameterized.named_parameters(
        # XLA routes capsules of fewer than 8 entries as sums over the
        # input axis, wider ones as products (eager: always products).
        ("narrow_2x3", 2, 3),
        ("wide_2x4", 2, 4),
    )
    def test_compiled_matches_eager(self, d_cov, d_out):
        case = [
            np.asarray(x, np.float32)
            for x in random_case(9, d_cov=d_cov, d_out=d_out)
        ]
        expected = reference_batch(*random_case(9, d_cov=d_cov, d_out=d_out), 3)
        for mode in XLA_MODES & set(MODES):
            compiled = run_in(capsule_ops.heinsen_routing, mode)(*case)
            for got, want in zip(compiled, capsule_ops.heinsen_routing(*case)):
                self.assertAllClose(got, want, rtol=1e-5, atol=1e-5)
            for got, want in zip(compiled, expected):
                self.assertAllClose(got, want, rtol=1e-3, atol=1e-3)

    def test_rejects_bad_shapes(self):
        scores, votes, beta_use, beta_ign = random_case(10)
        with self.assertRaisesRegex(
            ValueError, r"\(batch, n_in, n_out, d_cov, d_out\)"
        ):
            capsule_ops.heinsen_routing(
                scores, votes[..., 0], beta_use, beta_ign
            )
        with self.assertRaisesRegex(
            ValueError, r"scores of shape \(batch, n_in\)"
        ):
            capsule_ops.heinsen_routing(scores[0], votes, beta_use, beta_ign)
        with self.assertRaisesRegex(ValueError, "num_iterations.*Received: 0"):
            capsule_ops.heinsen_routing(scores, votes, beta_use, beta_ign, 0)


if __name__ == "__main__":
    absltest.main()
