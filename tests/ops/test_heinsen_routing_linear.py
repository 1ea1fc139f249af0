"""Heinsen routing from input moments equals routing of the formed votes
(on every Keras backend)."""

import numpy as np
from absl.testing import absltest, parameterized
from keras import ops

from keras_capsules import ops as capsule_ops
from tests.every_backend import (
    MODES,
    XLA_MODES,
    TestCase,
    numpy,
    run_in,
    value_and_gradients,
)
from tests.ops.test_heinsen_routing import reference_batch


def linear_case(
    seed, batch=2, n_in=7, n_out=3, d_cov=2, d_in=3, d_out=4, dtype="float64"
):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=shape).astype(dtype)
        for shape in (
            (batch, n_in),
            (batch, n_in, d_cov, d_in),
            (n_out, d_in, d_out),
            (n_out, d_cov, d_out),
            (n_out,),
            (n_out,),
        )
    ]


def formed_votes(capsules, kernel, bias):
    return np.einsum("bicd,jdh->bijch", capsules, kernel) + bias


class HeinsenRoutingLinearTest(TestCase):
    @parameterized.named_parameters(("one", 1), ("three", 3), ("five", 5))
    def test_matches_the_paper_algorithm_float64(self, iterations):
        scores, capsules, kernel, bias, beta_use, beta_ign = linear_case(
            iterations
        )
        got = capsule_ops.heinsen_routing_linear(
            scores, capsules, kernel, bias, beta_use, beta_ign, iterations
        )
        betas = [np.broadcast_to(b, (7, 3)) for b in (beta_use, beta_ign)]
        want = reference_batch(
            scores, formed_votes(capsules, kernel, bias), *betas, iterations
        )
        for g, w in zip(got, want):
            self.assertAllClose(g, w, rtol=1e-5, atol=1e-5)

    def test_matches_formed_votes_float32_with_masks(self):
        case = linear_case(4, batch=3, n_in=9, dtype="float32")
        scores, capsules, kernel, bias, beta_use, beta_ign = case
        # Offset inputs: the moments must not lose the spread to the mean.
        capsules = capsules + 20.0
        mask = np.ones((3, 9), bool)
        mask[0, 5:] = False
        mask[2, 1:] = False  # All but one input masked.
        output_mask = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool)
        got = capsule_ops.heinsen_routing_linear(
            scores,
            capsules,
            kernel,
            bias,
            beta_use,
            beta_ign,
            3,
            mask=mask,
            output_mask=output_mask,
        )
        want = capsule_ops.heinsen_routing(
            scores.astype("float64"),
            formed_votes(capsules.astype("float64"), kernel, bias),
            beta_use,
            beta_ign,
            3,
            mask=mask,
            output_mask=output_mask,
        )
        for g, w in zip(got, want):
            self.assertAllClose(g, w, rtol=1e-3, atol=1e-3)

    def test_per_example_bias(self):
        scores, capsules, kernel, _, beta_use, beta_ign = linear_case(5)
        bias = np.random.default_rng(6).normal(size=(2, 3, 2, 4))
        got = capsule_ops.heinsen_routing_linear(
            scores, capsules, kernel, bias, beta_use, beta_ign
        )
        want = capsule_ops.heinsen_routing(
            scores,
            formed_votes(capsules, kernel, bias[:, None]),
            beta_use,
            beta_ign,
        )
        for g, w in zip(got, want):
            self.assertAllClose(g, w, rtol=1e-6, atol=1e-6)

    @parameterized.named_parameters(
        ("float64", "float64", 1e-6), ("float32_masked", "float32", 1e-3)
    )
    def test_gradients_equal_the_formed_votes_gradients(self, dtype, tol):
        # The vote-free path is another way to compute the same function,
        # so its derivatives with respect to every input must agree.
        case = linear_case(10, batch=3, n_in=9, dtype=dtype)
        scores, capsules, kernel, bias, beta_use, beta_ign = case
        mask = output_mask = None
        if dtype == "float32":
            mask = np.ones((3, 9), bool)
            mask[0, 6:] = False
            mask[2, 1:] = False
            output_mask = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], bool)
        # Weights on each output so that no gradient is a plain sum.
        rng = np.random.default_rng(11)
        probes = tuple(
            rng.normal(size=shape).astype(dtype)
            for shape in ((3, 3), (3, 3, 2, 4), (3, 3, 2, 4))
        )

        def gradients(route):
            tensors = [
                np.asarray(t, dtype)
                for t in (scores, capsules, kernel, bias, beta_use, beta_ign)
            ]
            _, result = value_and_gradients(route, tensors, probes)
            return [numpy(gradient) for gradient in result]

        def vote_free(s, x, w, b, use, ign):
            return capsule_ops.heinsen_routing_linear(
                s, x, w, b, use, ign, 3, mask=mask, output_mask=output_mask
            )

        def formed(s, x, w, b, use, ign):
            votes = ops.einsum("bicd,jdh->bijch", x, w) + b
            return capsule_ops.heinsen_routing(
                s, votes, use, ign, 3, mask=mask, output_mask=output_mask
            )

        names = ("scores", "capsules", "kernel", "bias", "beta_use", "beta_ign")
        for name, got, want in zip(
            names, gradients(vote_free), gradients(formed)
        ):
            scale = max(1.0, float(np.abs(want).max()))
            self.assertAllClose(
                got / scale, want / scale, rtol=tol, atol=tol, msg=name
            )

    def test_identical_inputs_have_finite_gradients(self):
        scores, capsules, kernel, bias, beta_use, beta_ign = linear_case(
            7, dtype="float32"
        )
        capsules = np.broadcast_to(capsules[:, :1], capsules.shape).copy()
        outputs, gradients = value_and_gradients(
            lambda *x: capsule_ops.heinsen_routing_linear(
                scores, *x, beta_use, beta_ign, 3
            ),
            [capsules, kernel, bias],
        )
        for tensor in [*outputs, *gradients]:
            self.assertTrue(np.all(np.isfinite(numpy(tensor))))

    def test_compiled_matches_eager(self):
        case = linear_case(8, dtype="float32")
        for mode in XLA_MODES & set(MODES):
            compiled = run_in(capsule_ops.heinsen_routing_linear, mode)
            for g, w in zip(
                compiled(*case), capsule_ops.heinsen_routing_linear(*case)
            ):
                self.assertAllClose(g, w, rtol=1e-4, atol=1e-4)

    def test_rejects_a_kernel_of_the_wrong_size(self):
        scores, capsules, kernel, bias, beta_use, beta_ign = linear_case(9)
        with self.assertRaisesRegex(ValueError, r"\(n_out, d_in, d_out\)"):
            capsule_ops.heinsen_routing_linear(
                scores, capsules, kernel[:, :2], bias, beta_use, beta_ign
            )


if __name__ == "__main__":
    absltest.main()
