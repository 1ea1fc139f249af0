"""The whole EM routing's gradient, in every mode and so through each
backend's gradient of its steps, against central differences of the
NumPy version of Procedure 1."""

import keras
import numpy as np
from absl.testing import absltest, parameterized

from keras_capsules import ops as capsule_ops
from keras_capsules.ops import ActivationCost
from tests.every_backend import (
    MODES,
    TestCase,
    numpy,
    run_in,
    value_and_gradients,
)
from tests.ops.test_em_routing import make_case, reference


class EMRoutingGradientTest(TestCase):
    @parameterized.named_parameters(
        ("procedure_1", {}, None),
        ("masked", {}, np.array([[1, 0, 1, 1, 1]], bool)),
        (
            "every_cost_option",
            {
                "activation_bias_gain": 3.0,
                "cost_scale": 0.5,
                "standardize_costs": True,
                "variance_floor": 0.01,
                "assignment_smoothing": 0.5,
            },
            None,
        ),
    )
    def test_matches_finite_differences_of_the_reference(self, options, mask):
        rng = np.random.default_rng(5)
        votes, activations, beta_u, beta_a = make_case(
            rng, batch=1, n_in=5, n_out=2, h=3
        )
        lambdas = (0.5, 1.0, 2.0)
        options = {"variance_floor": 1e-3, **options}
        output_weights = [
            rng.normal(size=shape) for shape in ((1, 2), (1, 2, 3), (1, 2, 3))
        ]

        def reference_loss(votes, activations):
            outputs = reference(
                votes, activations, beta_u, beta_a, lambdas, mask, **options
            )
            return sum(
                float(np.sum(weight * output))
                for weight, output in zip(output_weights, outputs)
            )

        def central_differences(array, loss):
            step, result = 1e-6, np.zeros_like(array)
            for index in np.ndindex(array.shape):
                shift = np.zeros_like(array)
                shift[index] = step
                result[index] = (loss(array + shift) - loss(array - shift)) / (
                    2 * step
                )
            return result

        expected_votes = central_differences(
            votes, lambda v: reference_loss(v, activations)
        )
        expected_activations = central_differences(
            activations, lambda a: reference_loss(votes, a)
        )

        def loss_and_gradient(votes, activations):
            return value_and_gradients(
                lambda v, a: tuple(
                    capsule_ops.em_routing(
                        v,
                        a,
                        beta_u,
                        beta_a,
                        lambdas,
                        mask,
                        cost=ActivationCost(**options),
                    )
                ),
                [votes, activations],
                tuple(output_weights),
            )[1]

        for mode in MODES:
            got_votes, got_activations = run_in(loss_and_gradient, mode)(
                votes, activations
            )
            self.assertAllClose(got_votes, expected_votes, atol=1e-6, rtol=1e-5)
            if mask is not None:  # a masked child's activation is unused
                expected_activations = np.where(mask, expected_activations, 0)
            self.assertAllClose(
                got_activations, expected_activations, atol=1e-6, rtol=1e-5
            )

    def test_float32_gradient_of_votes_far_from_zero(self):
        # A shared offset of 100 and a spread of 0.01, as in
        # test_em_routing's forward test: the routing's centring keeps
        # the float32 gradient within 1.5e-6 of float64's largest entry
        # in every mode (2e-3 without it).
        rng = np.random.default_rng(5)
        votes, activations, beta_u, beta_a = make_case(rng)
        # Votes that float32 holds exactly, so both runs route the same.
        votes = (100.0 + 0.01 * votes).astype("float32").astype("float64")
        lambdas = (0.5, 1.0, 2.0)
        output_weights = [
            rng.normal(size=shape) for shape in ((2, 3), (2, 3, 4), (2, 3, 4))
        ]

        def gradients(votes, activations):
            dtype = keras.backend.standardize_dtype(votes.dtype)
            return value_and_gradients(
                lambda v, a: tuple(
                    capsule_ops.em_routing(v, a, beta_u, beta_a, lambdas)
                ),
                [votes, activations],
                tuple(weight.astype(dtype) for weight in output_weights),
            )[1]

        expected = [numpy(g) for g in gradients(votes, activations)]
        for mode in MODES:
            got = run_in(gradients, mode)(
                votes.astype("float32"), activations.astype("float32")
            )
            for got_gradient, want in zip(got, expected):
                scale = float(np.max(np.abs(want)))
                self.assertAllClose(
                    numpy(got_gradient).astype("float64"),
                    want,
                    atol=1e-4 * scale,
                    rtol=0,
                )


if __name__ == "__main__":
    absltest.main()
