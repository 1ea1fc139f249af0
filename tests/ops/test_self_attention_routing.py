"""Self-attention routing against a loop-by-loop NumPy version of
Efficient-CapsNet's eqs. 2-5 (on every Keras backend)."""

import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase
from tests.ops import routing_checks


def exponential_squash_reference(s):
    """Eq. 2 for one vector."""
    norm = np.sqrt(np.dot(s, s))
    return np.zeros_like(s) if norm == 0 else (1 - np.exp(-norm)) * s / norm


def routing_reference(votes, priors, mask=None):
    """Eqs. 3-5 and 2 for one example's `(n_in, n_out, d)` votes, forming
    each output's self-attention matrix A_j as the paper does."""
    n_in, n_out, dim = votes.shape
    take_part = np.ones(n_in, bool) if mask is None else mask
    row_sums = np.zeros((n_in, n_out))
    for j in range(n_out):
        attention = np.zeros((n_in, n_in))  # A_j, eq. 3
        for i in range(n_in):
            for k in range(n_in):
                if take_part[i] and take_part[k]:
                    attention[i, k] = votes[i, j] @ votes[k, j] / np.sqrt(dim)
        row_sums[:, j] = attention.sum(axis=1)
    capsules = np.zeros((n_out, dim))
    for j in range(n_out):
        total = np.zeros(dim)
        for i in range(n_in):
            if take_part[i]:
                exps = np.exp(row_sums[i] - row_sums[i].max())
                coupling = exps[j] / exps.sum()  # eq. 4: softmax over j
                total += (coupling + priors[i, j]) * votes[i, j]  # eq. 5
        capsules[j] = exponential_squash_reference(total)
    return capsules


def route(votes, mask, priors):
    return capsule_ops.self_attention_routing(votes, priors[0], mask)


class SelfAttentionRoutingTest(TestCase):
    def test_matches_reference_float64(self):
        votes = routing_checks.random((3, 7, 4, 5), seed=0, scale=0.7)
        priors = routing_checks.random((7, 4), seed=1, scale=0.3)
        expected = [routing_reference(v, priors) for v in votes]
        routed = capsule_ops.self_attention_routing(votes, priors)
        self.assertAllClose(routed, expected, atol=1e-12, rtol=1e-12)

    def test_matches_reference_float32(self):
        votes = routing_checks.random((2, 9, 3, 6), seed=2, scale=0.5)
        expected = [routing_reference(v, np.zeros((9, 3))) for v in votes]
        routed = capsule_ops.self_attention_routing(votes.astype("float32"))
        self.assertDTypeEqual(routed, "float32")
        # float32 rounding of sums over 9 inputs of outputs of size < 1.
        self.assertAllClose(routed, expected, atol=1e-6, rtol=1e-5)

    def test_matches_reference_with_mask(self):
        votes = routing_checks.random((2, 6, 3, 4), seed=3)
        priors = routing_checks.random((6, 3), seed=4, scale=0.2)
        mask = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 0, 1, 0, 0]], bool)
        expected = [
            routing_reference(v, priors, m) for v, m in zip(votes, mask)
        ]
        routed = capsule_ops.self_attention_routing(votes, priors, mask)
        self.assertAllClose(routed, expected, atol=1e-12, rtol=1e-12)

    def test_identical_votes_couple_uniformly(self):
        # Equal agreements give C = 1 / n_out: s_j = n_in v / n_out.
        votes = np.ones((1, 4, 2, 3))
        routed = capsule_ops.self_attention_routing(votes)
        expected = exponential_squash_reference(np.full(3, 4 / 2))
        self.assertAllClose(routed[0], [expected, expected], atol=1e-12)

    def test_masked_inputs_change_nothing(self):
        votes = routing_checks.random((2, 6, 3, 4), seed=5)
        priors = routing_checks.random((6, 3), seed=6)
        mask = np.array([[1, 0, 1, 1, 0, 1], [1, 1, 0, 0, 0, 1]], bool)
        routed = capsule_ops.self_attention_routing(votes, priors, mask)
        for k in range(2):
            dropped = capsule_ops.self_attention_routing(
                votes[k : k + 1, mask[k]], priors[mask[k]]
            )
            self.assertAllClose(routed[k], dropped[0], atol=1e-12)
        garbage = np.where(mask[:, :, None, None], votes, 1e3)
        self.assertAllClose(
            capsule_ops.self_attention_routing(garbage, priors, mask),
            routed,
            atol=1e-12,
        )

    def test_finite_at_hard_points(self):
        priors = np.zeros((2, 4, 3))
        routing_checks.assert_finite_at_hard_points(
            self, route, (2, 4, 3, 5), priors
        )

    def test_compiled_matches_eager(self):
        votes = routing_checks.random((2, 5, 3, 4), seed=8)
        priors = routing_checks.random((2, 5, 3), seed=9, scale=0.1)
        routing_checks.assert_compiled_matches_eager(self, route, votes, priors)

    def test_bad_priors_are_refused(self):
        with self.assertRaisesRegex(ValueError, "coupling_priors.*broadcasts"):
            capsule_ops.self_attention_routing(
                np.zeros((1, 4, 3, 2)), np.zeros((5, 3))
            )


if __name__ == "__main__":
    absltest.main()
