"""Uniform routing against NumPy (on every Keras backend)."""

import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase
from tests.ops import routing_checks
from tests.ops.test_dynamic_routing import squash_reference


def routing_reference(votes, mask=None):
    """squash(sum_i u_hat[j|i] / n_out) for one example."""
    n_in, n_out, _ = votes.shape
    take_part = np.ones(n_in) if mask is None else mask
    return np.array(
        [
            squash_reference(
                sum(take_part[i] * votes[i, j] for i in range(n_in)) / n_out
            )
            for j in range(n_out)
        ]
    )


def route(votes, mask):
    return capsule_ops.uniform_routing(votes, mask)


class UniformRoutingTest(TestCase):
    def test_matches_reference(self):
        votes = routing_checks.random((3, 7, 4, 5), seed=0)
        mask = np.random.default_rng(1).uniform(size=(3, 7)) > 0.3
        for m in (None, mask):
            expected = [
                routing_reference(v, None if m is None else m[b])
                for b, v in enumerate(votes)
            ]
            self.assertAllClose(route(votes, m), expected, atol=1e-12)

    def test_masked_inputs_change_nothing(self):
        routing_checks.assert_masked_inputs_change_nothing(
            self, route, routing_checks.random((2, 6, 3, 4), seed=2)
        )

    def test_finite_at_hard_points(self):
        routing_checks.assert_finite_at_hard_points(self, route, (2, 4, 3, 5))


if __name__ == "__main__":
    absltest.main()
