"""Convolutional EM routing against Procedure 1 on an explicit
child-to-parent incidence of a tiny grid."""

import itertools

import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import ops as capsule_ops
from keras_capsules.ops import ActivationCost, capsule_patches
from tests.every_backend import (
    TestCase,
    numpy,
    value_and_gradients,
)
from tests.ops.em_reference import em_reference

LAMBDAS = (0.5, 1.0, 2.0)


def dense_problem(votes, height, width, strides):
    """Lists every child `(y, x, t)` and parent `(y', x', c)` and builds the
    incidence and the `(n_child, n_parent, h)` votes from the geometry,
    independently of the op's patch helpers."""
    rows, columns, kernel, _, types_in, types_out, dim = votes.shape
    children = [
        (y, x, t)
        for y in range(height)
        for x in range(width)
        for t in range(types_in)
    ]
    parents = [
        (y, x, c)
        for y in range(rows)
        for x in range(columns)
        for c in range(types_out)
    ]
    incidence = np.zeros((len(children), len(parents)), bool)
    dense = np.zeros((len(children), len(parents), dim))
    for i, (y, x, t) in enumerate(children):
        for j, (py, px, c) in enumerate(parents):
            ky, kx = y - strides * py, x - strides * px
            if 0 <= ky < kernel and 0 <= kx < kernel:
                incidence[i, j] = True
                dense[i, j] = votes[py, px, ky, kx, t, c]
    return incidence, dense


class ConvEMRoutingTest(TestCase):
    @parameterized.named_parameters(
        ("stride1_float64", 5, 4, 3, 1, "float64", 1e-5),
        ("stride2_float64", 7, 5, 3, 2, "float64", 1e-5),
        ("stride2_float32", 7, 7, 3, 2, "float32", 1e-3),
        ("kernel2_stride1_float32", 4, 5, 2, 1, "float32", 1e-3),
    )
    def test_matches_explicit_incidence(
        self, height, width, kernel, strides, dtype, tolerance
    ):
        rng = np.random.default_rng(0)
        types_in, types_out, dim = 2, 3, 4
        rows = (height - kernel) // strides + 1
        columns = (width - kernel) // strides + 1
        votes = rng.normal(
            size=(2, rows, columns, kernel, kernel, types_in, types_out, dim)
        )
        activations = rng.uniform(0.05, 1.0, (2, height, width, types_in))
        mask = np.ones_like(activations, bool)
        mask[1, 0, 1, 0] = False
        beta_u = rng.normal(scale=0.5, size=types_out)
        beta_a = rng.normal(scale=0.5, size=types_out)
        arguments = (activations.astype(dtype), beta_u, beta_a, LAMBDAS)
        results = [
            capsule_ops.conv_em_routing(
                votes.astype(dtype), *arguments, strides=strides, mask=mask
            ),
            # The same votes with the parent types before the receptive
            # field.
            capsule_ops.conv_em_routing_by_parent(
                np.transpose(votes, (0, 1, 2, 6, 3, 4, 5, 7)).astype(dtype),
                *arguments,
                strides=strides,
                mask=mask,
            ),
        ]
        parent_betas = [
            np.tile(beta, rows * columns) for beta in (beta_u, beta_a)
        ]
        for b, result in itertools.product(range(2), results):
            incidence, dense = dense_problem(votes[b], height, width, strides)
            expected = em_reference(
                dense,
                (activations[b] * mask[b]).reshape(-1),
                incidence,
                *parent_betas,
                LAMBDAS,
            )
            shapes = [
                (rows, columns, types_out),
                (rows, columns, types_out, dim),
            ]
            for got, want, shape in zip(result, expected, shapes + shapes[1:]):
                self.assertDTypeEqual(got, dtype)
                self.assertAllClose(
                    got[b], want.reshape(shape), rtol=tolerance, atol=tolerance
                )

    @parameterized.named_parameters(
        ("float64", "float64", 1e-5), ("float32", "float32", 1e-3)
    )
    def test_activation_cost_options_match(self, dtype, tolerance):
        # Bias gain, cost scale, costs standardised across the parent types
        # of each position, and a variance floor, all at once.
        rng = np.random.default_rng(7)
        height, width, strides, types_in, types_out = 5, 5, 2, 2, 3
        votes = 0.1 * rng.normal(size=(2, 2, 2, 3, 3, types_in, types_out, 4))
        activations = rng.uniform(0.05, 1.0, (2, height, width, types_in))
        beta_u = rng.normal(scale=0.5, size=types_out)
        beta_a = rng.normal(scale=0.5, size=types_out)
        options = {
            "activation_bias_gain": 4.0,
            "cost_scale": 1.0 / 18,
            "cost_per_mass": True,
            "standardize_costs": True,
            "variance_floor": 5e-4,
            "assignment_smoothing": 0.6,
        }
        result = capsule_ops.conv_em_routing(
            votes.astype(dtype),
            activations.astype(dtype),
            beta_u,
            beta_a,
            LAMBDAS,
            strides=strides,
            cost=ActivationCost(**options),
        )
        positions = np.repeat(np.arange(4), types_out)  # parent groups
        for b in range(2):
            incidence, dense = dense_problem(votes[b], height, width, strides)
            expected = em_reference(
                dense,
                activations[b].reshape(-1),
                incidence,
                np.tile(beta_u, 4),
                np.tile(beta_a, 4),
                LAMBDAS,
                bias_gain=4.0,
                cost_scale=1.0 / 18,
                cost_per_mass=True,
                standardize_groups=positions,
                variance_floor=5e-4,
                assignment_smoothing=0.6,
            )
            self.assertAllClose(
                result[0][b],
                expected[0].reshape(2, 2, types_out),
                rtol=tolerance,
                atol=tolerance,
            )
            self.assertAllClose(
                result[1][b],
                expected[1].reshape(2, 2, types_out, 4),
                rtol=tolerance,
                atol=tolerance,
            )

    def test_float32_keeps_collapsing_variances(self):
        # Small inverse temperatures let some parents settle on a single
        # child, so their variances shrink towards 0; float32 must still
        # agree with float64 (a moment form E[V^2] - mu^2 did not: 7e-3).
        rng = np.random.default_rng(5)
        votes = rng.normal(size=(2, 3, 4, 2, 2, 2, 2, 16))
        activations = rng.uniform(size=(2, 4, 5, 2))
        lambdas = (0.01, 0.02, 0.03)
        exact = capsule_ops.conv_em_routing(
            votes, activations, [0.0] * 2, [0.0] * 2, lambdas
        )
        single = capsule_ops.conv_em_routing(
            votes.astype("float32"),
            activations.astype("float32"),
            [0.0] * 2,
            [0.0] * 2,
            lambdas,
        )
        for got, want in zip(single, exact):
            self.assertAllClose(got, want, rtol=1e-4, atol=1e-4)

    def test_patches_round_trip(self):
        grid = np.arange(2 * 7 * 6 * 3, dtype="float32").reshape(2, 7, 6, 3)
        patches = capsule_patches.extract_patches(grid, 3, 2)
        self.assertEqual(patches.shape, (2, 3, 2, 3, 3, 3))
        self.assertAllEqual(patches[1, 2, 1, 0, 2], grid[1, 4, 4])
        # Sum-folding ones counts the patches that hold each child.
        counts = capsule_patches.fold_patches(
            np.ones((1, 3, 2, 3, 3)), (7, 6), 2
        )
        expected = np.zeros((7, 6))
        for y in range(3):
            for x in range(2):
                expected[2 * y : 2 * y + 3, 2 * x : 2 * x + 3] += 1
        self.assertAllEqual(counts[0], expected)

    def test_gradients_are_finite_at_hard_points(self):
        rng = np.random.default_rng(1)
        votes = np.ones((2, 2, 2, 3, 3, 2, 3, 16))  # identical: zero variance
        votes[1] = rng.normal(size=votes.shape[1:])
        activations = rng.uniform(size=(2, 4, 4, 2))
        activations[1] = 0.0  # no active child at all
        outputs, gradients = value_and_gradients(
            lambda *x: capsule_ops.conv_em_routing(
                *x, [0.1] * 3, [0.2] * 3, [1.0] * 5
            ),
            [votes.astype("float32"), activations.astype("float32")],
        )
        for tensor in [*outputs, *gradients]:
            self.assertTrue(np.all(np.isfinite(numpy(tensor))))

    def test_vote_offset_from_patches_routes_alike(self):
        # The layer's offset, formed from patches and kernel, against the
        # op's own from the votes: the routing does not depend on it.
        rng = np.random.default_rng(2)
        poses = rng.normal(size=(2, 5, 4, 2, 4, 4))
        activations = rng.uniform(size=(2, 5, 4, 2))
        activations[1, :3] = 0.0  # parents with no active child
        kernel = rng.normal(size=(3, 3, 2, 3, 4, 4))
        patches = capsule_patches.extract_patches(poses, 3, 1)
        votes = np.reshape(
            capsule_ops.conv_capsule_votes(patches, kernel),
            (2, 3, 2, 3, 3, 3, 2, 16),
        )
        offset = capsule_ops.conv_capsule_vote_means(
            patches, kernel, capsule_patches.extract_patches(activations, 3, 1)
        )
        arguments = (votes, activations, [0.1] * 3, [0.2] * 3, LAMBDAS)
        expected = capsule_ops.conv_em_routing_by_parent(*arguments)
        got = capsule_ops.conv_em_routing_by_parent(
            *arguments, vote_offset=np.reshape(offset, (2, 3, 2, 3, 16))
        )
        for got_tensor, expected_tensor in zip(got, expected):
            self.assertAllClose(
                got_tensor, expected_tensor, rtol=1e-10, atol=1e-10
            )
        with self.assertRaisesRegex(ValueError, r"\(batch, H', W', C, h\)"):
            capsule_ops.conv_em_routing_by_parent(
                *arguments, vote_offset=np.zeros((2, 3, 2, 3, 4, 4))
            )

    def test_rejects_mismatched_grids(self):
        votes = np.zeros((1, 2, 2, 3, 3, 2, 3, 16))
        with self.assertRaisesRegex(ValueError, r"\(3, 3\) parent positions"):
            capsule_ops.conv_em_routing(
                votes, np.ones((1, 5, 5, 2)), [0.0] * 3, [0.0] * 3, [1.0]
            )
        with self.assertRaisesRegex(ValueError, "B = 2"):
            capsule_ops.conv_em_routing(
                votes, np.ones((1, 4, 4, 3)), [0.0] * 3, [0.0] * 3, [1.0]
            )
        # Parent-major: (batch, H', W', C, K, K, B, h).
        by_parent = np.zeros((1, 2, 2, 3, 3, 3, 2, 16))
        with self.assertRaisesRegex(ValueError, r"\(3, 3\) parent positions"):
            capsule_ops.conv_em_routing_by_parent(
                by_parent, np.ones((1, 5, 5, 2)), [0.0] * 3, [0.0] * 3, [1.0]
            )
        with self.assertRaisesRegex(ValueError, "B = 2"):
            capsule_ops.conv_em_routing_by_parent(
                by_parent, np.ones((1, 4, 4, 3)), [0.0] * 3, [0.0] * 3, [1.0]
            )
        with self.assertRaisesRegex(ValueError, r"\(batch, H', W', C, K, K"):
            capsule_ops.conv_em_routing_by_parent(
                by_parent[..., 0, :],
                np.ones((1, 4, 4, 2)),
                [0.0] * 3,
                [0.0] * 3,
                [1.0],
            )


if __name__ == "__main__":
    absltest.main()
