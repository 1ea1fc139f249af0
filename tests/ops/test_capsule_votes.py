"""Capsule votes against a loop-by-loop NumPy version of `V = P W + B`
(on every Keras backend)."""

import importlib
import unittest

import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import ops as capsule_ops
from tests.every_backend import (
    BACKEND,
    MODES,
    TestCase,
    run_in,
    value_and_gradients,
)


def votes_reference(poses, kernel, bias, shared):
    """`V[b, i, j] = P[b, i] @ W[i, j] + B[i, j]`, one product at a time."""
    batch, n_in = poses.shape[:2]
    n_out = kernel.shape[-3]
    votes = np.zeros(
        (batch, n_in, n_out, poses.shape[2], kernel.shape[-1]), poses.dtype
    )
    for b in range(batch):
        for i in range(n_in):
            for j in range(n_out):
                weight = kernel[j] if shared else kernel[i, j]
                offset = 0.0
                if bias is not None:
                    offset = bias[j] if shared else bias[i, j]
                votes[b, i, j] = poses[b, i] @ weight + offset
    return votes


def votes_gradients_reference(poses, kernel, shared, upstream):
    """Gradients of `sum(V * G)` with respect to the poses, the kernel and
    the bias, for `V = P W + B` written out: `dP[b, i] = sum_j G[b, i, j]
    W[i, j]^T`, `dW[i, j] = sum_b P[b, i]^T G[b, i, j]`, `dB[i, j] = sum_b
    G[b, i, j]` (summed over `i` too when the weights are shared)."""
    weights = np.broadcast_to(kernel, (poses.shape[1], *kernel.shape[-3:]))
    d_poses = np.einsum("bijch,ijdh->bicd", upstream, weights)
    d_kernel = np.einsum("bicd,bijch->ijdh", poses, upstream)
    d_bias = upstream.sum(axis=0)
    if shared:
        d_kernel, d_bias = d_kernel.sum(axis=0), d_bias.sum(axis=0)
    return d_poses, d_kernel, d_bias


class CapsuleVotesTest(TestCase):
    @parameterized.named_parameters(
        ("per_pair", False, False, 3),
        ("per_pair_bias", False, True, 4),
        ("shared", True, False, 4),
        ("shared_bias", True, True, 1),
        ("vector_capsules", False, True, 1),
    )
    def test_matches_reference(self, shared, with_bias, d_cov):
        rng = np.random.default_rng(d_cov)
        n_in, n_out, d_in, d_out = 5, 3, 4, 6
        poses = rng.normal(size=(2, n_in, d_cov, d_in))
        pair = (n_out,) if shared else (n_in, n_out)
        kernel = rng.normal(size=(*pair, d_in, d_out))
        bias = rng.normal(size=(*pair, d_cov, d_out)) if with_bias else None
        votes = capsule_ops.capsule_votes(poses, kernel, bias, shared=shared)
        self.assertAllClose(
            votes, votes_reference(poses, kernel, bias, shared), rtol=1e-12
        )

    @parameterized.product(shared=(False, True), d_cov=(1, 4), mode=MODES)
    def test_values_and_gradients_with_bias_in_every_mode(
        self, shared, d_cov, mode
    ):
        # Under XLA the bias rides in the product (`_with_bias_rows`);
        # elsewhere it is added to the votes.
        rng = np.random.default_rng(d_cov)
        n_in, n_out, d_in, d_out = 5, 3, 4, 6
        pair = (n_out,) if shared else (n_in, n_out)
        poses = rng.normal(size=(3, n_in, d_cov, d_in))
        kernel = rng.normal(size=(*pair, d_in, d_out))
        bias = rng.normal(size=(*pair, d_cov, d_out))
        upstream = rng.normal(size=(3, n_in, n_out, d_cov, d_out))

        def votes_and_gradients(poses, kernel, bias):
            return value_and_gradients(
                lambda *x: capsule_ops.capsule_votes(*x, shared=shared),
                [poses, kernel, bias],
                upstream,
            )

        votes, gradients = run_in(votes_and_gradients, mode)(
            poses, kernel, bias
        )
        self.assertAllClose(
            votes, votes_reference(poses, kernel, bias, shared), rtol=1e-12
        )
        for got, want in zip(
            gradients,
            votes_gradients_reference(poses, kernel, shared, upstream),
        ):
            self.assertAllClose(got, want, rtol=1e-12, atol=1e-12)

    def test_zero_poses_give_the_bias(self):
        bias = np.arange(2 * 3 * 2 * 5, dtype="float32").reshape(2, 3, 2, 5)
        votes = capsule_ops.capsule_votes(
            np.zeros((4, 2, 2, 3), "float32"),
            np.ones((2, 3, 3, 5), "float32"),
            bias,
        )
        self.assertAllEqual(votes, np.broadcast_to(bias, (4, 2, 3, 2, 5)))

    @parameterized.named_parameters(("plain", False), ("bias", True))
    @unittest.skipUnless(
        BACKEND == "tensorflow",
        "a compiled function of unknown dimensions is TensorFlow's",
    )
    def test_shared_kernel_takes_any_count_under_xla(self, with_bias):
        tf = importlib.import_module("tensorflow")
        rng = np.random.default_rng(0)
        kernel = rng.normal(size=(3, 4, 2)).astype("f4")
        bias = rng.normal(size=(3, 4, 2)).astype("f4") if with_bias else None
        votes_of = tf.function(
            lambda poses: capsule_ops.capsule_votes(
                poses, kernel, bias, shared=True
            ),
            jit_compile=True,
            input_signature=[tf.TensorSpec((None, None, 4, 4), tf.float32)],
        )
        for batch, count in ((2, 1), (3, 7)):
            poses = rng.normal(size=(batch, count, 4, 4)).astype("f4")
            self.assertAllClose(
                votes_of(poses),
                votes_reference(poses, kernel, bias, shared=True),
                rtol=1e-6,
                atol=1e-6,
            )

    def test_kernel_cast_to_the_poses_dtype(self):
        votes = capsule_ops.capsule_votes(
            np.ones((1, 2, 4, 4), "float16"), np.ones((2, 3, 4, 4), "float32")
        )
        self.assertDTypeEqual(votes, "float16")
        self.assertAllEqual(votes, np.full((1, 2, 3, 4, 4), 4.0))

    @parameterized.named_parameters(
        ("vector_poses", (2, 5, 4), (5, 3, 4, 6), False),
        ("wrong_d_in", (2, 5, 1, 4), (5, 3, 8, 6), False),
        ("wrong_n_in", (2, 5, 1, 4), (6, 3, 4, 6), False),
        ("shared_without_flag", (2, 5, 1, 4), (3, 4, 6), False),
        ("per_pair_with_flag", (2, 5, 1, 4), (5, 3, 4, 6), True),
    )
    def test_bad_shapes_raise(self, poses_shape, kernel_shape, shared):
        with self.assertRaisesRegex(ValueError, "capsule_votes.*Received"):
            capsule_ops.capsule_votes(
                np.zeros(poses_shape), np.zeros(kernel_shape), shared=shared
            )


def conv_votes_reference(patches, kernel):
    """`V[b, y, x, c, ky, kx, t] = P[b, y, x, ky, kx, t] @ W[ky, kx, t, c]`,
    one product at a time."""
    batch, rows, columns, size, _, types_in = patches.shape[:6]
    types_out = kernel.shape[3]
    votes = np.zeros(
        (batch, rows, columns, types_out, size, size, types_in)
        + (patches.shape[6], kernel.shape[5])
    )
    for b, y, x, c, ky, kx, t in np.ndindex(votes.shape[:7]):
        votes[b, y, x, c, ky, kx, t] = (
            patches[b, y, x, ky, kx, t] @ kernel[ky, kx, t, c]
        )
    return votes


class ConvCapsuleVotesTest(TestCase):
    @parameterized.named_parameters(
        ("matrices_4x4", (2, 2, 3, 2, 2, 3, 4, 4), 5),
        ("rectangular", (1, 3, 2, 3, 3, 2, 2, 3), 4),
    )
    def test_matches_one_product_at_a_time(self, patch_shape, types_out):
        rng = np.random.default_rng(0)
        patches = rng.normal(size=patch_shape)
        size, _, types_in, _, d_in = patch_shape[3:]
        kernel = rng.normal(size=(size, size, types_in, types_out, d_in, 2))
        self.assertAllClose(
            capsule_ops.conv_capsule_votes(patches, kernel),
            conv_votes_reference(patches, kernel),
            rtol=1e-12,
            atol=1e-12,
        )

    def test_rejects_a_kernel_of_another_receptive_field(self):
        patches = np.zeros((1, 2, 2, 3, 3, 2, 4, 4))
        with self.assertRaisesRegex(ValueError, r"\(K, K, B, C, d_in"):
            capsule_ops.conv_capsule_votes(
                patches, np.zeros((3, 3, 4, 5, 4, 4))
            )


class ConvCapsuleVoteMeansTest(TestCase):
    def test_matches_the_weighted_mean_of_the_votes(self):
        rng = np.random.default_rng(1)
        patches = rng.normal(size=(2, 2, 3, 3, 3, 2, 4, 4))
        kernel = rng.normal(size=(3, 3, 2, 5, 4, 4))
        weights = rng.uniform(size=(2, 2, 3, 3, 3, 2))
        weights[0, 1, 2] = 0.0  # no child weighs: mean 0
        weights[1, 0, 0, :, :, 1] = 0.0  # one child type left out
        votes = conv_votes_reference(patches, kernel)
        # (b, y, x, c, ky, kx, t, 4, 4): sum over the receptive field.
        total = weights.sum(axis=(3, 4, 5))
        expected = np.einsum("byxklt,byxckltpq->byxcpq", weights, votes)
        expected /= np.where(total > 0, total, 1.0)[..., None, None, None]
        got = capsule_ops.conv_capsule_vote_means(patches, kernel, weights)
        self.assertAllClose(got, expected, rtol=1e-12, atol=1e-12)
        self.assertAllEqual(got[0, 1, 2], np.zeros((5, 4, 4)))

    def test_rejects_weights_of_another_receptive_field(self):
        patches = np.zeros((1, 2, 2, 3, 3, 2, 4, 4))
        kernel = np.zeros((3, 3, 2, 5, 4, 4))
        with self.assertRaisesRegex(ValueError, r"\(batch, H', W', K, K, B\)"):
            capsule_ops.conv_capsule_vote_means(
                patches, kernel, np.ones((1, 2, 2, 3, 3, 4))
            )
        with self.assertRaisesRegex(ValueError, r"\(K, K, B, C, d_in"):
            capsule_ops.conv_capsule_vote_means(
                patches,
                np.zeros((3, 3, 4, 5, 4, 4)),
                np.ones((1, 2, 2, 3, 3, 2)),
            )


if __name__ == "__main__":
    absltest.main()
