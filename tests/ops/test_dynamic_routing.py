"""Dynamic routing against a loop-by-loop NumPy version of Procedure 1
(on every Keras backend)."""

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


def squash_reference(s):
    """Eq. 1 for one vector."""
    norm_squared = float(np.dot(s, s))
    if norm_squared == 0.0:
        return np.zeros_like(s)
    return norm_squared / (1.0 + norm_squared) * s / np.sqrt(norm_squared)


def routing_reference(votes, num_iterations, mask=None):
    """Procedure 1 of Sabour et al. for one example's `(n_in, n_out, d)`
    votes, written from the paper with explicit loops."""
    n_in, n_out, dim = votes.shape
    take_part = np.ones(n_in, bool) if mask is None else mask
    logits = np.zeros((n_in, n_out))
    for _ in range(num_iterations):
        coupling = np.zeros((n_in, n_out))
        for i in range(n_in):
            exps = np.exp(logits[i] - logits[i].max())
            coupling[i] = exps / exps.sum()  # softmax over output capsules.
        capsules = np.zeros((n_out, dim))
        for j in range(n_out):
            total = np.zeros(dim)
            for i in range(n_in):
                if take_part[i]:
                    total += coupling[i, j] * votes[i, j]
            capsules[j] = squash_reference(total)
        for i in range(n_in):
            for j in range(n_out):
                logits[i, j] += np.dot(votes[i, j], capsules[j])
    return capsules


def random_votes(shape, seed, scale=0.5):
    return np.random.default_rng(seed).normal(size=shape) * scale


class DynamicRoutingTest(TestCase):
    @parameterized.named_parameters(
        ("one_iteration", 1), ("three_iterations", 3), ("five", 5)
    )
    def test_matches_reference_float64(self, num_iterations):
        votes = random_votes((3, 7, 4, 5), seed=num_iterations)
        expected = [routing_reference(v, num_iterations) for v in votes]
        routed = capsule_ops.dynamic_routing(votes, num_iterations)
        self.assertAllClose(routed, expected, rtol=1e-5, atol=1e-5)

    def test_matches_reference_float32(self):
        votes = random_votes((2, 9, 3, 6), seed=1, scale=2.0)
        expected = [routing_reference(v, 3) for v in votes]
        routed = capsule_ops.dynamic_routing(votes.astype("float32"))
        self.assertDTypeEqual(routed, "float32")
        self.assertAllClose(routed, expected, rtol=1e-3, atol=1e-3)

    def test_matches_reference_with_mask(self):
        votes = random_votes((3, 6, 4, 5), seed=2)
        mask = np.array(
            [[1, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 1]], bool
        )
        expected = [routing_reference(v, 3, m) for v, m in zip(votes, mask)]
        routed = capsule_ops.dynamic_routing(votes, 3, mask=mask)
        self.assertAllClose(routed, expected, rtol=1e-5, atol=1e-5)

    def test_masked_inputs_change_nothing(self):
        votes = random_votes((2, 6, 3, 4), seed=3)
        mask = np.array([[1, 0, 1, 1, 0, 1], [1, 1, 1, 0, 0, 0]], bool)
        routed = capsule_ops.dynamic_routing(votes, mask=mask)
        for k in range(2):
            dropped = capsule_ops.dynamic_routing(votes[k : k + 1, mask[k]])
            self.assertAllClose(routed[k], dropped[0], atol=1e-12)
        garbage = np.where(mask[:, :, None, None], votes, 1e3)
        self.assertAllClose(
            capsule_ops.dynamic_routing(garbage, mask=mask), routed, atol=1e-12
        )

    def test_all_inputs_masked_gives_zero_capsules(self):
        votes = random_votes((2, 4, 3, 2), seed=4)
        routed = capsule_ops.dynamic_routing(votes, mask=np.zeros((2, 4), bool))
        self.assertAllEqual(routed, np.zeros((2, 3, 2)))

    def test_examples_are_routed_independently(self):
        # Logits start at zero for each example: no state crosses the batch.
        votes = random_votes((4, 5, 3, 2), seed=5)
        together = capsule_ops.dynamic_routing(votes)
        alone = [
            capsule_ops.dynamic_routing(votes[k : k + 1])[0] for k in range(4)
        ]
        self.assertAllClose(together, alone, atol=1e-12)
        again = capsule_ops.dynamic_routing(votes)
        self.assertAllClose(again, together, atol=0)

    def test_coupling_is_softmax_over_outputs(self):
        # One input voting strongly for output 0 and weakly elsewhere: with
        # a softmax over outputs its vote concentrates on output 0; a
        # softmax over inputs would leave the one input's coupling at 1.
        votes = np.zeros((1, 1, 3, 2))
        votes[0, 0, 0] = [3.0, 0.0]
        votes[0, 0, 1:] = [[0.1, 0.0], [0.1, 0.0]]
        one = capsule_ops.dynamic_routing(votes, num_iterations=1)
        three = capsule_ops.dynamic_routing(votes, num_iterations=3)
        self.assertAllClose(
            one[0, :, 0],
            [
                squash_reference(np.array([1.0]))[0],
                squash_reference(np.array([0.1 / 3]))[0],
                squash_reference(np.array([0.1 / 3]))[0],
            ],
        )
        self.assertGreater(float(three[0, 0, 0]), float(one[0, 0, 0]))
        self.assertLess(float(three[0, 1, 0]), float(one[0, 1, 0]))

    @parameterized.named_parameters(
        ("zero_votes", np.zeros((2, 4, 3, 5)), None),
        (
            "one_unmasked_input",
            random_votes((2, 4, 3, 5), seed=6),
            np.array([[0, 0, 1, 0], [1, 0, 0, 0]], bool),
        ),
        ("identical_votes", np.ones((2, 4, 3, 5)), None),
        ("saturated", random_votes((2, 4, 3, 5), seed=7, scale=1e3), None),
    )
    def test_gradients_are_finite(self, votes, mask):
        for dtype in ("float32", "float64"):
            routed, (gradient,) = value_and_gradients(
                lambda x: capsule_ops.dynamic_routing(x, mask=mask),
                [votes.astype(dtype)],
                upstream=np.broadcast_to(np.arange(5.0), (2, 3, 5)),
            )
            self.assertTrue(np.all(np.isfinite(numpy(routed))))
            self.assertTrue(np.all(np.isfinite(numpy(gradient))))

    @parameterized.named_parameters(
        ("one_iteration", 1, None),
        ("three_iterations", 3, None),
        ("four_with_mask", 4, np.array([[1, 0, 1, 1], [0, 1, 1, 1]], bool)),
    )
    def test_gradient_matches_finite_differences_of_the_reference(
        self, num_iterations, mask
    ):
        # The op's own gradient (reads the votes 2 (r - 1) times) against
        # central differences of the loop-by-loop reference, float64.
        votes = random_votes((2, 4, 3, 2), seed=num_iterations, scale=1.5)
        weights = np.random.default_rng(9).normal(size=(3, 2))

        def reference_loss(v):
            return sum(
                float(
                    np.sum(
                        weights
                        * routing_reference(
                            v[b],
                            num_iterations,
                            None if mask is None else mask[b],
                        )
                    )
                )
                for b in range(len(v))
            )

        step = 1e-6
        expected = np.zeros_like(votes)
        for index in np.ndindex(votes.shape):
            shift = np.zeros_like(votes)
            shift[index] = step
            expected[index] = (
                reference_loss(votes + shift) - reference_loss(votes - shift)
            ) / (2 * step)
        for mode in MODES:

            def gradient(x):
                return value_and_gradients(
                    lambda x: capsule_ops.dynamic_routing(
                        x, num_iterations, mask
                    ),
                    [x],
                    upstream=np.broadcast_to(weights, (2, 3, 2)),
                )[1][0]

            self.assertAllClose(
                run_in(gradient, mode)(votes), expected, rtol=1e-6, atol=1e-7
            )

    def test_compiled_matches_eager(self):
        votes = random_votes((3, 5, 4, 2), seed=8).astype("float32")
        mask = np.array([[1, 1, 0, 1, 1], [0, 1, 1, 1, 1], [1] * 5], bool)
        for mode in XLA_MODES & set(MODES):
            compiled = run_in(
                lambda v: capsule_ops.dynamic_routing(v, 3, mask), mode
            )(votes)
            self.assertAllClose(
                compiled,
                capsule_ops.dynamic_routing(votes, 3, mask),
                atol=1e-6,
            )

    def test_rejects_bad_shapes_and_iterations(self):
        with self.assertRaisesRegex(
            ValueError, r"\(batch, n_in, n_out, d_out\)"
        ):
            capsule_ops.dynamic_routing(np.zeros((2, 3, 4)))
        with self.assertRaisesRegex(ValueError, "num_iterations.*Received: 0"):
            capsule_ops.dynamic_routing(np.zeros((1, 2, 3, 4)), 0)


if __name__ == "__main__":
    absltest.main()
