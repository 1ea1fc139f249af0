"""TensorFlow's gradient of EM routing's weighted moments (its own
gradient outside XLA, its gradient probes under XLA): against automatic
differentiation of the plain formulas and, in float32, against
float64."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules.backend.tensorflow import em_moments
from keras_capsules.backend.tensorflow.em_gradient_probes import (
    gradient_probes,
)


def plain_moments(votes, weights, variance_floor, with_distances):
    """The formulas of Procedure 1's M-step, written directly (einsum)."""
    total = tf.reduce_sum(weights, axis=-1)
    shares = weights / tf.where(total > 0, total, 1.0)[..., None]
    means = tf.einsum("bpji,bpjih->bpjh", shares, votes)
    squared = tf.square(votes - means[..., None, :])
    variances = tf.einsum("bpji,bpjih->bpjh", shares, squared)
    variances += variance_floor
    outputs = (total, means, variances)
    if with_distances:
        outputs += (tf.einsum("bpjih,bpjh->bpji", squared, 1.0 / variances),)
    return outputs


def probed_moments(votes, weights, variance_floor, with_distances):
    """`weighted_moments` with its votes' gradient through a probe."""
    (probe,) = gradient_probes(votes, 1)
    return em_moments.weighted_moments(
        votes, weights, variance_floor, with_distances, probe
    )


def gradients(
    moments, votes, weights, cotangents, with_distances, variance_floor=1e-3
):
    with tf.GradientTape() as tape:
        tape.watch([votes, weights])
        outputs = moments(votes, weights, variance_floor, with_distances)
        # A cotangent of None leaves that output out of the loss.
        loss = tf.add_n(
            [
                tf.reduce_sum(output * cotangent)
                for output, cotangent in zip(outputs, cotangents)
                if cotangent is not None
            ]
        )
    return outputs, tape.gradient(loss, [votes, weights])


def assert_same_results(test, results, expected):
    """`results` and `expected`, each `(outputs, gradients)` as `gradients`
    returns them, agree: outputs to 1e-12, gradients to 1e-9 (float64)."""
    for output, expected_output in zip(results[0], expected[0]):
        test.assertAllClose(output, expected_output, rtol=1e-12)
    for gradient, expected_gradient in zip(results[1], expected[1]):
        test.assertAllClose(gradient, expected_gradient, rtol=1e-9, atol=1e-9)


def hard_case(rng, with_distances, used):
    """Votes, weights and cotangents (None where the output is unused,
    `used` lists the others) with a parent no child votes for and one
    held by one child."""
    votes = tf.constant(rng.normal(size=(2, 3, 4, 5, 6)))
    weights = rng.uniform(size=(2, 3, 4, 5))
    weights[0, 0, 0] = 0.0  # a parent no child votes for
    weights[1, 2, 3, :4] = 0.0  # a parent held by one child
    shapes = ((2, 3, 4), (2, 3, 4, 6), (2, 3, 4, 6), (2, 3, 4, 5))
    cotangents = [
        tf.constant(rng.normal(size=shape)) if index in used else None
        for index, shape in enumerate(shapes[: 3 + with_distances])
    ]
    return votes, tf.constant(weights), cotangents


# Which outputs have upstream gradients: (with_distances, used).
USED_OUTPUTS = (
    ("with_distances", True, (0, 1, 2, 3)),
    ("without_distances", False, (0, 1, 2)),
    ("means_only", True, (1,)),
    ("distances_only", True, (3,)),
)


class WeightedMomentsGradientTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.named_parameters(*USED_OUTPUTS)
    def test_matches_automatic_differentiation(self, with_distances, used):
        votes, weights, cotangents = hard_case(
            np.random.default_rng(3), with_distances, used
        )
        for compile_mode in (None, "graph"):
            moments = em_moments.weighted_moments
            if compile_mode:
                moments = tf.function(moments, autograph=False)
            assert_same_results(
                self,
                gradients(moments, votes, weights, cotangents, with_distances),
                gradients(
                    plain_moments, votes, weights, cotangents, with_distances
                ),
            )

    def test_tight_cluster_gradient_in_float32(self):
        # Votes near 1 with spread 1e-3: the recomputed deviations keep
        # their digits, as automatic differentiation's did.
        rng = np.random.default_rng(4)
        votes = 1.0 + 1e-3 * rng.normal(size=(1, 1, 2, 8, 4))
        weights = rng.uniform(0.5, 1.0, size=(1, 1, 2, 8))
        cotangents = [rng.normal(size=s) for s in ((1, 1, 2), (1, 1, 2, 4))]
        cotangents += [rng.normal(size=(1, 1, 2, 4)), None]
        results = {}
        for dtype in ("float32", "float64"):
            results[dtype] = gradients(
                em_moments.weighted_moments,
                tf.constant(votes, dtype),
                tf.constant(weights, dtype),
                [
                    None if c is None else tf.constant(c, dtype)
                    for c in cotangents
                ],
                True,
            )[1]
        for got, expected in zip(results["float32"], results["float64"]):
            scale = float(np.max(np.abs(expected)))
            self.assertAllClose(got, expected, atol=1e-4 * scale, rtol=0)


class GradientProbesTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.named_parameters(*USED_OUTPUTS)
    def test_matches_automatic_differentiation(self, with_distances, used):
        votes, weights, cotangents = hard_case(
            np.random.default_rng(6), with_distances, used
        )
        expected = gradients(
            plain_moments, votes, weights, cotangents, with_distances
        )

        def run(votes, weights):
            return gradients(
                probed_moments, votes, weights, cotangents, with_distances
            )

        for compile_mode in (None, "graph", "xla"):
            if compile_mode:
                run = tf.function(run, jit_compile=compile_mode == "xla")
            assert_same_results(self, run(votes, weights), expected)

    def test_calls_add_up_through_their_probes(self):
        # Two M-steps on the same votes: the votes' gradient is the sum
        # of both calls', formed from both probes at once.
        rng = np.random.default_rng(7)
        votes = tf.constant(rng.normal(size=(2, 1, 3, 4, 5)))
        weights = [tf.constant(rng.uniform(size=(2, 1, 3, 4))) for _ in "ab"]
        cotangents = [
            [tf.constant(rng.normal(size=t.shape)) for t in outputs]
            for outputs in (
                plain_moments(votes, weights[0], 1e-3, True),
                plain_moments(votes, weights[1], 1e-3, False),
            )
        ]

        def loss(votes, weights, moments):
            probes = gradient_probes(votes, 2)
            total = 0.0
            for call, with_distances in enumerate((True, False)):
                extra = (probes[call],) if moments is None else ()
                outputs = (moments or em_moments.weighted_moments)(
                    votes, weights[call], 1e-3, with_distances, *extra
                )
                for output, cotangent in zip(outputs, cotangents[call]):
                    total += tf.reduce_sum(output * cotangent)
            return total

        def gradient(votes, weights, moments):
            with tf.GradientTape() as tape:
                tape.watch([votes, weights])
                value = loss(votes, weights, moments)
            return tape.gradient(value, [votes, weights])

        expected = gradient(votes, weights, plain_moments)
        got = tf.function(gradient, jit_compile=True)(votes, weights, None)
        self.assertAllClose(got[0], expected[0], rtol=1e-9, atol=1e-9)
        for got_weights, expected_weights in zip(got[1], expected[1]):
            self.assertAllClose(
                got_weights, expected_weights, rtol=1e-9, atol=1e-9
            )

    def test_far_cluster_gradient_in_float32(self):
        # Votes centred as a whole (their mean over all children is near
        # 0), but the weights pick one tight cluster at 1 (spread 1e-3,
        # variances at the 1e-9 floor's scale): every V - mu is small
        # against V and mu. The tolerance of the tight-cluster test above;
        # the gradient outside XLA misses float64 by 4e-5 of its largest
        # entry here, and so do the probes.
        rng = np.random.default_rng(8)
        votes = np.concatenate(
            [
                1.0 + 1e-3 * rng.normal(size=(1, 1, 2, 8, 4)),
                -1.0 + 1e-3 * rng.normal(size=(1, 1, 2, 8, 4)),
            ],
            axis=3,
        )
        weights = np.concatenate(
            [
                rng.uniform(0.5, 1.0, size=(1, 1, 2, 8)),
                rng.uniform(0.0, 1e-3, size=(1, 1, 2, 8)),
            ],
            axis=3,
        )
        cotangents = [
            rng.normal(size=shape)
            for shape in ((1, 1, 2), (1, 1, 2, 4), (1, 1, 2, 4), (1, 1, 2, 16))
        ]

        def run(dtype, moments, compile_mode):
            def compute(votes, weights):
                return gradients(
                    moments,
                    votes,
                    weights,
                    [tf.constant(c, dtype) for c in cotangents],
                    True,
                    variance_floor=1e-9,
                )[1]

            if compile_mode:
                compute = tf.function(
                    compute, jit_compile=compile_mode == "xla"
                )
            return [
                np.asarray(gradient, "float64")
                for gradient in compute(
                    tf.constant(votes, dtype), tf.constant(weights, dtype)
                )
            ]

        expected = run("float64", plain_moments, None)
        for compile_mode in (None, "xla"):
            got = run("float32", probed_moments, compile_mode)
            for got_gradient, want in zip(got, expected):
                scale = float(np.max(np.abs(want)))
                self.assertAllClose(
                    got_gradient, want, atol=1e-4 * scale, rtol=0
                )


if __name__ == "__main__":
    tf.test.main()
