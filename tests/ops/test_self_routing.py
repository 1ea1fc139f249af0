"""Self-routing against a loop-by-loop NumPy version of Hahn et al. 2019
(on every Keras backend)."""

import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase, numpy
from tests.ops import routing_checks


def routing_reference(votes, routing_logits, logits, mask=None):
    """The paper's eqs. for one example: c = softmax_j(routing logits),
    a_j = sum_i c_ij a_i / sum_i a_i, u_j = sum_i c_ij a_i u_hat_ij /
    sum_i c_ij a_i; returns (logit(a_j), u_j)."""
    n_in, n_out, size = votes.shape
    a = 1 / (1 + np.exp(-logits))
    if mask is not None:
        a = a * mask
    parent_logits, poses = np.zeros(n_out), np.zeros((n_out, size))
    coupling = np.zeros((n_in, n_out))
    for i in range(n_in):
        exps = np.exp(routing_logits[i] - routing_logits[i].max())
        coupling[i] = exps / exps.sum()
    for j in range(n_out):
        share = sum(coupling[i, j] * a[i] for i in range(n_in))
        activation = share / a.sum()
        parent_logits[j] = np.log(activation) - np.log1p(-activation)
        poses[j] = sum(coupling[i, j] * a[i] * votes[i, j] for i in range(n_in))
        poses[j] /= share
    return parent_logits, poses


def _expected(votes, routing_logits, logits, mask=None):
    results = [
        routing_reference(
            votes[b],
            routing_logits[b],
            logits[b],
            None if mask is None else mask[b],
        )
        for b in range(len(votes))
    ]
    return np.array([r[0] for r in results]), np.array([r[1] for r in results])


def route(votes, mask, routing_logits, logits):
    return capsule_ops.self_routing(votes, routing_logits, logits, mask)


class SelfRoutingTest(TestCase):
    def test_matches_reference_float64(self):
        votes = routing_checks.random((3, 7, 4, 5), seed=0)
        routing_logits = routing_checks.random((3, 7, 4), seed=1, scale=2.0)
        logits = routing_checks.random((3, 7), seed=2, scale=2.0)
        parent_logits, poses = capsule_ops.self_routing(
            votes, routing_logits, logits
        )
        expected = _expected(votes, routing_logits, logits)
        self.assertAllClose(parent_logits, expected[0], atol=1e-12, rtol=1e-12)
        self.assertAllClose(poses, expected[1], atol=1e-12, rtol=1e-12)

    def test_matches_reference_float32(self):
        votes = routing_checks.random((2, 9, 3, 6), seed=3)
        routing_logits = routing_checks.random((2, 9, 3), seed=4)
        logits = routing_checks.random((2, 9), seed=5)
        parent_logits, poses = capsule_ops.self_routing(
            *(x.astype("float32") for x in (votes, routing_logits, logits))
        )
        self.assertDTypeEqual(poses, "float32")
        expected = _expected(votes, routing_logits, logits)
        # float32 rounding of log-sum-exps and weighted means of size ~1.
        self.assertAllClose(parent_logits, expected[0], atol=1e-5, rtol=1e-5)
        self.assertAllClose(poses, expected[1], atol=1e-5, rtol=1e-5)

    def test_matches_reference_with_mask(self):
        votes = routing_checks.random((2, 6, 3, 4), seed=6)
        routing_logits = routing_checks.random((2, 6, 3), seed=7)
        logits = routing_checks.random((2, 6), seed=8)
        mask = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 0, 1, 0, 0]], bool)
        parent_logits, poses = route(votes, mask, routing_logits, logits)
        expected = _expected(votes, routing_logits, logits, mask)
        self.assertAllClose(parent_logits, expected[0], atol=1e-12)
        self.assertAllClose(poses, expected[1], atol=1e-12)

    def test_extreme_routing_logits_keep_finite_logits(self):
        # Every child routes to parent 0 with weight 1 - 2 exp(-92), which
        # rounds to 1 in float64: parent 0's logit is held at the largest
        # the dtype gives, -log(smallest normal) (708 in float64), and the
        # other parents' logits log c = -92 stay exact.
        votes = routing_checks.random((1, 4, 3, 2), seed=9)
        routing_logits = np.tile([92.0, 0.0, 0.0], (1, 4, 1))
        parent_logits, _ = capsule_ops.self_routing(
            votes, routing_logits, np.zeros((1, 4))
        )
        parent_logits = numpy(parent_logits)[0]
        self.assertTrue(np.all(np.isfinite(parent_logits)))
        self.assertAllClose(
            parent_logits[0], -np.log(np.finfo("float64").tiny), atol=1e-9
        )
        self.assertAllClose(parent_logits[1:], [-92.0] * 2, atol=1e-12)

    def test_masked_inputs_change_nothing(self):
        routing_checks.assert_masked_inputs_change_nothing(
            self,
            route,
            routing_checks.random((2, 6, 3, 4), seed=10),
            routing_checks.random((2, 6, 3), seed=11),
            routing_checks.random((2, 6), seed=12),
        )

    def test_finite_at_hard_points(self):
        for scale in (1.0, 1e3):
            routing_checks.assert_finite_at_hard_points(
                self,
                route,
                (2, 4, 3, 5),
                routing_checks.random((2, 4, 3), seed=13, scale=scale),
                routing_checks.random((2, 4), seed=14, scale=scale),
            )

    def test_compiled_matches_eager(self):
        routing_checks.assert_compiled_matches_eager(
            self,
            route,
            routing_checks.random((2, 5, 3, 4), seed=15),
            routing_checks.random((2, 5, 3), seed=16),
            routing_checks.random((2, 5), seed=17),
        )


if __name__ == "__main__":
    absltest.main()
