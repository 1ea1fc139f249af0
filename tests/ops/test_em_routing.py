"""EM routing against the NumPy version of Procedure 1."""

import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import ops as capsule_ops
from keras_capsules.ops import ActivationCost
from tests.every_backend import TestCase, numpy, value_and_gradients
from tests.ops.em_reference import em_reference

LAMBDAS = (0.5, 1.0, 2.0)


def make_case(rng, batch=2, n_in=6, n_out=3, h=4):
    return (
        rng.normal(size=(batch, n_in, n_out, h)),
        rng.uniform(0.05, 1.0, size=(batch, n_in)),
        rng.normal(scale=0.5, size=n_out),
        rng.normal(scale=0.5, size=n_out),
    )


def reference(
    votes, activations, beta_u, beta_a, lambdas, mask=None, **options
):
    if options.pop("standardize_costs", False):
        options["standardize_groups"] = np.zeros(votes.shape[2], int)
    if "activation_bias_gain" in options:
        options["bias_gain"] = options.pop("activation_bias_gain")
    outputs = []
    for b in range(votes.shape[0]):
        keep = np.ones(votes.shape[1], bool) if mask is None else mask[b]
        incidence = np.ones((keep.sum(), votes.shape[2]), bool)
        outputs.append(
            em_reference(
                votes[b, keep],
                activations[b, keep],
                incidence,
                beta_u,
                beta_a,
                lambdas,
                **options,
            )
        )
    return [np.stack(parts) for parts in zip(*outputs)]


# The activation as public implementations changed it (ActivationCost),
# each alone and together, at a lambda that gives logits of order 1.
COST_OPTIONS = (
    ("bias_gain", (0.002, 0.004, 0.006), {"activation_bias_gain": 500.0}),
    ("cost_scale", LAMBDAS, {"cost_scale": 1.0 / 6}),
    ("standardized", LAMBDAS, {"standardize_costs": True}),
    ("per_mass", (0.02, 0.04, 0.06), {"cost_per_mass": True}),
    ("variance_floor", LAMBDAS, {"variance_floor": 5e-4}),
    ("assignment_smoothing", LAMBDAS, {"assignment_smoothing": 0.8}),
    (
        "all",
        LAMBDAS,
        {
            "activation_bias_gain": 3.0,
            "cost_scale": 0.5,
            "cost_per_mass": True,
            "standardize_costs": True,
            "variance_floor": 0.01,
            "assignment_smoothing": 0.5,
        },
    ),
)


class EMRoutingTest(TestCase):
    @parameterized.named_parameters(
        ("float64", "float64", 1e-5),
        ("float32", "float32", 1e-3),
    )
    def test_matches_procedure_1(self, dtype, tolerance):
        rng = np.random.default_rng(0)
        votes, activations, beta_u, beta_a = make_case(rng)
        expected = reference(votes, activations, beta_u, beta_a, LAMBDAS)
        result = capsule_ops.em_routing(
            votes.astype(dtype),
            activations.astype(dtype),
            beta_u,
            beta_a,
            LAMBDAS,
        )
        for got, want in zip(result, expected):
            self.assertDTypeEqual(got, dtype)
            self.assertAllClose(got, want, rtol=tolerance, atol=tolerance)

    @parameterized.parameters(1, 2, 5)
    def test_iterations_follow_the_schedule_length(self, iterations):
        rng = np.random.default_rng(1)
        votes, activations, beta_u, beta_a = make_case(rng)
        lambdas = np.linspace(0.2, 1.0, iterations)
        expected = reference(votes, activations, beta_u, beta_a, lambdas)
        result = capsule_ops.em_routing(
            votes, activations, beta_u, beta_a, lambdas
        )
        for got, want in zip(result, expected):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-5)

    @parameterized.named_parameters(
        ("float64", "float64", 1e-5), ("float32", "float32", 1e-3)
    )
    def test_masked_inputs_are_removed(self, dtype, tolerance):
        rng = np.random.default_rng(2)
        votes, activations, beta_u, beta_a = make_case(rng, n_in=7)
        mask = np.ones((2, 7), bool)
        mask[0, [1, 5]] = False
        mask[1, 1:] = False  # all inputs masked but one
        votes[~mask] = 1e3  # padding that would dominate if it leaked in
        expected = reference(
            votes[:1], activations[:1], beta_u, beta_a, LAMBDAS, mask[:1]
        )
        result = capsule_ops.em_routing(
            votes.astype(dtype),
            activations.astype(dtype),
            beta_u,
            beta_a,
            LAMBDAS,
            mask=mask,
        )
        for got, want in zip(result, expected):
            self.assertAllClose(got[0], want[0], rtol=tolerance, atol=tolerance)
        # A lone input: each mean is its vote, with zero variance, so the
        # exact cost is -inf and a_j = 1; ours floors the variance.
        self.assertAllClose(result[1][1], votes[1, 0], atol=tolerance)
        self.assertAllClose(result[0][1], np.ones(3), atol=tolerance)

    def test_saturated_activations_match(self):
        rng = np.random.default_rng(3)
        votes, activations, beta_u, beta_a = make_case(rng)
        lambdas = (5.0, 20.0, 80.0)  # drives a_j to 0 or 1 (|logit| >> 30)
        expected = reference(votes, activations, beta_u, beta_a, lambdas)
        result = capsule_ops.em_routing(
            votes, activations, beta_u, beta_a, lambdas
        )
        for got, want in zip(result, expected):
            self.assertAllClose(got, want, rtol=1e-5, atol=1e-5)

    def test_float32_votes_far_from_zero_match(self):
        # A shared offset of 100 and a spread of 0.01: computing variances
        # from moments would cancel catastrophically without centring.
        rng = np.random.default_rng(5)
        votes, activations, beta_u, beta_a = make_case(rng)
        votes = (100.0 + 0.01 * votes).astype("float32").astype("float64")
        expected = reference(votes, activations, beta_u, beta_a, LAMBDAS)
        result = capsule_ops.em_routing(
            votes.astype("float32"),
            activations.astype("float32"),
            beta_u,
            beta_a,
            LAMBDAS,
        )
        self.assertAllClose(result[0], expected[0], rtol=1e-3, atol=1e-3)
        self.assertAllClose(result[1], expected[1], rtol=1e-6, atol=1e-3)
        self.assertAllClose(result[2], expected[2], rtol=1e-3, atol=1e-8)

    def test_float32_standardized_costs_of_nearly_equal_parents_match(self):
        # Variances 2,000 times smaller than the floor: every parent's cost
        # is about -1,100 and they differ by about 1e-3. Subtracting the
        # costs' mean from the costs left float32 rounding of the spread's
        # size (1.0e-3 in the activations, measured); forming the
        # differences without the common part leaves 9e-5.
        rng = np.random.default_rng(7)
        shape = (2, 32, 8, 16)
        votes = 0.3 + 1e-3 * rng.normal(size=shape)
        votes = votes.astype("float32").astype("float64")
        activations = rng.uniform(0.5, 1.0, shape[:2]).astype("float32")
        beta = np.zeros(8)
        options = {"standardize_costs": True, "variance_floor": 5e-4}
        lambdas = (1.0, 1.0, 1.0)
        expected = reference(votes, activations, beta, beta, lambdas, **options)
        result = capsule_ops.em_routing(
            votes.astype("float32"),
            activations,
            beta,
            beta,
            lambdas,
            cost=ActivationCost(**options),
        )
        self.assertGreater(np.std(expected[0]), 0.1)  # parents tell apart
        self.assertAllClose(result[0], expected[0], rtol=0, atol=3e-4)

    @parameterized.named_parameters(
        (f"{name}_{dtype}", lambdas, options, dtype, tolerance)
        for name, lambdas, options in COST_OPTIONS
        for dtype, tolerance in (("float64", 1e-5), ("float32", 1e-3))
    )
    def test_activation_cost_options_match(
        self, lambdas, options, dtype, tolerance
    ):
        rng = np.random.default_rng(6)
        votes, activations, beta_u, beta_a = make_case(rng, n_out=4)
        votes *= 0.1  # small variances: log sigma^h far below 0
        mask = np.ones((2, 6), bool)
        mask[1, :2] = False
        expected = reference(
            votes, activations, beta_u, beta_a, lambdas, mask, **options
        )
        result = capsule_ops.em_routing(
            votes.astype(dtype),
            activations.astype(dtype),
            beta_u,
            beta_a,
            lambdas,
            mask=mask,
            cost=ActivationCost(**options),
        )
        for got, want in zip(result, expected):
            self.assertAllClose(got, want, rtol=tolerance, atol=tolerance)
        # The options change the answer: the test above can fail.
        plain = reference(votes, activations, beta_u, beta_a, lambdas, mask)
        self.assertGreater(np.abs(plain[0] - expected[0]).max(), 1e-3)

    def test_smoothing_keeps_parents_from_collapsing_onto_one_child(self):
        # Four parents; each sees its own child at the centre of the other
        # three's votes (a ring of radius 3 in the first two entries).
        # Procedure 1 then gives each parent its own child alone, and the
        # parent's variance collapses. Smoothing keeps every child in.
        ring = 2 * np.pi * np.arange(3) / 3
        votes = np.zeros((1, 4, 4, 16))
        for parent in range(4):
            others = [child for child in range(4) if child != parent]
            votes[0, others, parent, 0] = 3 * np.cos(ring)
            votes[0, others, parent, 1] = 3 * np.sin(ring)
        votes += 0.01 * np.random.default_rng(8).normal(size=votes.shape)
        activations = np.ones((1, 4))
        betas = np.zeros(4)
        lambdas = (1e-3, 1e-3, 1e-3)

        def spread(smoothing, iterations=lambdas):
            variances = capsule_ops.em_routing(
                votes,
                activations,
                betas,
                betas,
                iterations,
                cost=ActivationCost(assignment_smoothing=smoothing),
            )[2]
            return np.min(numpy(variances)[..., :2])

        trace = capsule_ops.em_routing_trace(
            votes, activations, betas, betas, lambdas
        )
        self.assertGreater(np.max(numpy(trace[-1][0])), 0.999)  # committed
        first = spread(0.0, lambdas[:1])  # the uniform assignment's
        self.assertLess(spread(0.0), 1e-4 * first)
        # Half the weight of every child stays uniform: the parent keeps
        # about half of its first spread.
        self.assertGreater(spread(0.5), 0.4 * first)

    def test_standardized_costs_of_identical_parents_stay_finite(self):
        votes = np.ones((2, 5, 3, 16))  # equal costs: zero spread
        outputs, gradients = self._gradients(
            votes,
            np.full((2, 5), 0.5),
            (1.0, 2.0),
            cost=ActivationCost(standardize_costs=True),
        )
        for tensor in list(outputs) + gradients:
            self.assertTrue(np.all(np.isfinite(tensor)))

    def _gradients(self, votes, activations, lambdas, mask=None, cost=None):
        outputs, gradients = value_and_gradients(
            lambda *x: capsule_ops.em_routing(*x, lambdas, mask, cost),
            [
                np.asarray(votes, "float32"),
                np.asarray(activations, "float32"),
                np.asarray([0.1, -0.2, 0.3], "float32"),
                np.asarray([0.5, 0.0, -0.5], "float32"),
            ],
        )
        return [numpy(x) for x in outputs], [numpy(x) for x in gradients]

    @parameterized.named_parameters(
        ("identical_votes", "identical", 3),
        ("zero_activations", "inactive", 3),
        ("five_iterations", "ordinary", 5),
        ("all_masked_but_one", "masked", 5),
    )
    def test_hard_points_stay_finite(self, case, iterations):
        rng = np.random.default_rng(4)
        votes = rng.normal(size=(2, 5, 3, 16))
        activations = rng.uniform(size=(2, 5))
        mask = None
        if case == "identical":
            votes[:] = votes[:, :1, :1]
        if case == "inactive":
            activations[0] = 0.0
        if case == "masked":
            mask = np.zeros((2, 5), bool)
            mask[:, 2] = True
        lambdas = np.linspace(1.0, 3.0, iterations)
        outputs, gradients = self._gradients(votes, activations, lambdas, mask)
        for tensor in list(outputs) + gradients:
            self.assertTrue(np.all(np.isfinite(tensor)), case)
        if case == "inactive":  # no active child: mean 0, variance floor
            self.assertAllClose(outputs[1][0], np.zeros((3, 16)))

    def test_rejects_bad_arguments(self):
        votes = np.zeros((2, 3, 4, 16))
        with self.assertRaisesRegex(ValueError, r"\(batch, n_in, n_out, h\)"):
            capsule_ops.em_routing(votes[0], np.ones((2, 3)), 0.0, 0.0, [1.0])
        with self.assertRaisesRegex(ValueError, r"activations of shape"):
            capsule_ops.em_routing(votes, np.ones(3), 0.0, 0.0, [1.0])
        with self.assertRaisesRegex(ValueError, "one value per routing"):
            capsule_ops.em_routing(votes, np.ones((2, 3)), 0.0, 0.0, [])
        for name in ("activation_bias_gain", "cost_scale", "variance_floor"):
            with self.assertRaisesRegex(ValueError, f"`{name}`.*Received: 0"):
                capsule_ops.em_routing(
                    votes,
                    np.ones((2, 3)),
                    0.0,
                    0.0,
                    [1.0],
                    cost=ActivationCost(**{name: 0}),
                )
        for smoothing in (1.0, -0.1, True):
            with self.assertRaisesRegex(
                ValueError, rf"`assignment_smoothing`.*\[0, 1\).*{smoothing}"
            ):
                capsule_ops.em_routing(
                    votes,
                    np.ones((2, 3)),
                    0.0,
                    0.0,
                    [1.0],
                    cost=ActivationCost(assignment_smoothing=smoothing),
                )
        capsule_ops.em_routing(  # NumPy scalars are numbers too
            votes,
            np.ones((2, 3)),
            np.zeros(4),
            np.zeros(4),
            [1.0],
            cost=ActivationCost(variance_floor=np.float32(5e-4)),
        )


if __name__ == "__main__":
    absltest.main()
