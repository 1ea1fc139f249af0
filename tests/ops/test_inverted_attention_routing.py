"""Inverted dot-product attention routing against a loop-by-loop NumPy
version of Procedure 1 of Tsai et al. 2020 (on every Keras backend)."""

import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase
from tests.ops import routing_checks


def layer_norm_reference(pose, scale, offset):
    mean = sum(pose) / len(pose)
    variance = sum((x - mean) ** 2 for x in pose) / len(pose)
    return (pose - mean) / np.sqrt(variance + 1e-5) * scale + offset


def routing_reference(votes, num_iterations, scale, offset, mask=None):
    """Procedure 1 for one example's `(n_in, n_out, e)` votes: parents
    start at 0; each iteration computes agreements, routes by a softmax
    over the parents and normalises the parents' poses."""
    n_in, n_out, size = votes.shape
    take_part = np.ones(n_in, bool) if mask is None else mask
    poses = np.zeros((n_out, size))
    for _ in range(num_iterations):
        agreement = np.zeros((n_in, n_out))
        for i in range(n_in):
            for j in range(n_out):
                agreement[i, j] = poses[j] @ votes[i, j] / np.sqrt(size)
        new_poses = np.zeros((n_out, size))
        for i in range(n_in):
            exps = np.exp(agreement[i] - agreement[i].max())
            for j in range(n_out):
                if take_part[i]:
                    new_poses[j] += exps[j] / exps.sum() * votes[i, j]
        poses = np.array(
            [layer_norm_reference(p, scale, offset) for p in new_poses]
        )
    return poses


def route(votes, mask):
    return capsule_ops.inverted_attention_routing(votes, 3, mask=mask)


class InvertedAttentionRoutingTest(TestCase):
    @parameterized.named_parameters(("one", 1), ("two", 2), ("four", 4))
    def test_matches_reference_float64(self, num_iterations):
        votes = routing_checks.random((3, 7, 4, 6), seed=num_iterations)
        scale = 1 + routing_checks.random((6,), seed=10, scale=0.3)
        offset = routing_checks.random((6,), seed=11, scale=0.3)
        expected = [
            routing_reference(v, num_iterations, scale, offset) for v in votes
        ]
        routed = capsule_ops.inverted_attention_routing(
            votes, num_iterations, scale, offset
        )
        self.assertAllClose(routed, expected, atol=1e-12, rtol=1e-12)

    def test_matches_reference_float32(self):
        votes = routing_checks.random((2, 9, 3, 16), seed=2)
        expected = [routing_reference(v, 2, 1.0, 0.0) for v in votes]
        routed = capsule_ops.inverted_attention_routing(votes.astype("float32"))
        self.assertDTypeEqual(routed, "float32")
        # Normalised poses of size ~1: float32 rounding through 2 passes.
        self.assertAllClose(routed, expected, atol=1e-5, rtol=1e-5)

    def test_matches_reference_with_mask(self):
        votes = routing_checks.random((2, 6, 3, 4), seed=3)
        mask = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 0, 1, 0, 0]], bool)
        expected = [
            routing_reference(v, 3, 1.0, 0.0, m) for v, m in zip(votes, mask)
        ]
        self.assertAllClose(route(votes, mask), expected, atol=1e-12)

    def test_softmax_is_over_parents(self):
        # One child: a softmax over the parents splits it among them (each
        # parent's pose is then its normalised vote, whatever the split);
        # two children, one agreeing with parent 0: parent 0 moves towards
        # it and away from the uniform pass.
        votes = np.zeros((1, 2, 2, 4))
        votes[0, 0, 0] = [3.0, -1.0, 0.0, 0.0]
        votes[0, 1] = [[0.0, 0.0, 2.0, -2.0], [1.0, 0.0, -1.0, 0.0]]
        one = capsule_ops.inverted_attention_routing(votes, 1)
        two = capsule_ops.inverted_attention_routing(votes, 2)
        expected = [routing_reference(votes[0], t, 1.0, 0.0) for t in (1, 2)]
        self.assertAllClose(one[0], expected[0], atol=1e-12)
        self.assertAllClose(two[0], expected[1], atol=1e-12)
        self.assertNotAllClose(one, two)

    def test_masked_inputs_change_nothing(self):
        routing_checks.assert_masked_inputs_change_nothing(
            self, route, routing_checks.random((2, 6, 3, 4), seed=5)
        )

    def test_finite_at_hard_points(self):
        routing_checks.assert_finite_at_hard_points(self, route, (2, 4, 3, 5))

    def test_compiled_matches_eager(self):
        routing_checks.assert_compiled_matches_eager(
            self, route, routing_checks.random((2, 5, 3, 4), seed=8)
        )

    def test_bad_scale_is_refused(self):
        with self.assertRaisesRegex(ValueError, "`scale` of shape"):
            capsule_ops.inverted_attention_routing(
                np.zeros((1, 4, 3, 2)), scale=np.ones(3)
            )


if __name__ == "__main__":
    absltest.main()
