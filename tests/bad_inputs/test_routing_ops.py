"""Bad input to the routing ops: tensors whose shapes do not match the
votes, EM activations outside [0, 1], inverse temperatures that are not
positive, and float16 votes (routed in float32), for the dense and the
convolutional EM routing. Each gets a ValueError that names the argument
(issue 17, items 6-8). Variables are accepted wherever tensors are."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import ops

_RNG = np.random.default_rng(0)
_VOTES = _RNG.normal(size=(2, 5, 3, 4)).astype("float32")
_ACTIVATIONS = _RNG.uniform(size=(2, 5)).astype("float32")
_BETAS = np.zeros(3, "float32")


def em(votes=_VOTES, activations=_ACTIVATIONS, **overrides):
    arguments = {
        "beta_u": _BETAS,
        "beta_a": _BETAS,
        "inverse_temperatures": [0.5, 1.0],
        **overrides,
    }
    return ops.em_routing(votes, activations, **arguments)


class EMRoutingInputsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters(1.5, -0.1, np.nan)
    def test_activations_outside_zero_one_are_refused(self, bad):
        activations = _ACTIVATIONS.copy()
        activations[1, 2] = bad
        with self.assertRaisesRegex(ValueError, r"activations a_i in \[0, 1\]"):
            em(activations=activations)

    def test_activations_are_checked_in_a_graph(self):
        function = tf.function(lambda a: em(activations=a)[0])
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"activations a_i in \[0, 1\]"
        ):
            function(tf.constant(_ACTIVATIONS + 1.0))

    @parameterized.parameters([[0.0, 1.0]], [[-1.0]], [[1.0, np.nan]])
    def test_inverse_temperatures_must_be_positive(self, schedule):
        with self.assertRaisesRegex(ValueError, "positive finite inverse"):
            em(inverse_temperatures=schedule)

    @parameterized.named_parameters(
        ("activations", {"activations": np.ones((2, 4), "float32")}),
        ("beta_u", {"beta_u": np.zeros(4, "float32")}),
        ("mask", {"mask": np.ones((2, 4), bool)}),
    )
    def test_shapes_that_do_not_match_the_votes(self, overrides):
        (name,) = overrides
        with self.assertRaisesRegex(ValueError, f"`{name}` .*shape"):
            em(**overrides)

    def test_float16_identical_votes_route_in_float32(self):
        # Identical votes: zero variance, where 1e-9 underflows float16.
        votes = np.ones((2, 5, 3, 4), "float16")
        activations, means, variances = em(votes=votes)
        for tensor in (activations, means, variances):
            self.assertEqual(tensor.dtype, "float16")
        self.assertTrue(np.all(np.isfinite(activations)))
        self.assertAllClose(means, np.ones((2, 3, 4)), atol=1e-3)


# A 3x3 grid of B = 2 child types, K = 2, stride 1: a 2x2 grid of C = 3
# parent types with 4-dimensional votes.
_CONV_VOTES = _RNG.normal(size=(2, 2, 2, 2, 2, 2, 3, 4)).astype("float32")
_CONV_ACTIVATIONS = _RNG.uniform(size=(2, 3, 3, 2)).astype("float32")


def conv_em(votes=_CONV_VOTES, activations=_CONV_ACTIVATIONS, **overrides):
    arguments = {
        "beta_u": _BETAS,
        "beta_a": _BETAS,
        "inverse_temperatures": [0.5, 1.0],
        **overrides,
    }
    return ops.conv_em_routing(votes, activations, **arguments)


class ConvEMRoutingInputsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters(1.5, -0.1, np.nan)
    def test_activations_outside_zero_one_are_refused(self, bad):
        activations = _CONV_ACTIVATIONS.copy()
        activations[1, 2, 0, 1] = bad
        with self.assertRaisesRegex(ValueError, r"activations a_i in \[0, 1\]"):
            conv_em(activations=activations)

    @parameterized.parameters([[1.0, 0.0]], [[-1.0]], [[np.nan, 1.0]])
    def test_inverse_temperatures_must_be_positive(self, schedule):
        with self.assertRaisesRegex(ValueError, "positive finite inverse"):
            conv_em(inverse_temperatures=schedule)

    @parameterized.named_parameters(
        ("beta_u", {"beta_u": np.zeros(4, "float32")}),
        ("beta_a", {"beta_a": np.zeros((2, 3), "float32")}),
        ("mask", {"mask": np.ones((2, 3, 3, 1), bool)}),
    )
    def test_shapes_that_do_not_match_the_votes(self, overrides):
        (name,) = overrides
        with self.assertRaisesRegex(ValueError, f"`{name}` .*shape"):
            conv_em(**overrides)

    def test_masked_children_may_hold_anything(self):
        mask = np.ones((2, 3, 3, 2), bool)
        mask[:, 0] = False
        zeroed = _CONV_ACTIVATIONS.copy()
        zeroed[:, 0] = 0.0
        garbage = _CONV_ACTIVATIONS.copy()
        garbage[:, 0] = np.nan
        expected = conv_em(activations=zeroed)
        for actual, wanted in zip(
            conv_em(activations=garbage, mask=mask), expected
        ):
            self.assertAllClose(actual, wanted)

    def test_float16_identical_votes_route_in_float32(self):
        votes = np.ones(_CONV_VOTES.shape, "float16")
        activations, means, variances = conv_em(votes=votes)
        for tensor in (activations, means, variances):
            self.assertEqual(tensor.dtype, "float16")
        self.assertTrue(np.all(np.isfinite(activations)))
        self.assertAllClose(means, np.ones((2, 2, 2, 3, 4)), atol=1e-3)


class VariableInputsTest(tf.test.TestCase):
    """Ops take `tf.Variable`s as they take tensors (they once read
    `.ndim`, which variables lack)."""

    def test_routing_ops_accept_variables(self):
        dynamic_votes = _RNG.normal(size=(2, 5, 3, 4)).astype("float32")
        heinsen_votes = _RNG.normal(size=(2, 5, 3, 1, 4)).astype("float32")
        betas = np.zeros((5, 3), "float32")
        cases = (
            (em, (tf.Variable(_VOTES), tf.Variable(_ACTIVATIONS))),
            (
                conv_em,
                (tf.Variable(_CONV_VOTES), tf.Variable(_CONV_ACTIVATIONS)),
            ),
            (
                lambda votes: ops.dynamic_routing(votes, 3),
                (tf.Variable(dynamic_votes),),
            ),
            (
                lambda scores, votes: ops.heinsen_routing(
                    scores, votes, betas, betas
                ),
                (tf.Variable(np.zeros((2, 5), "float32")),)
                + (tf.Variable(heinsen_votes),),
            ),
        )
        for op, variables in cases:
            expected = op(*(tensor.numpy() for tensor in variables))
            actual = op(*variables)
            for got, wanted in zip(
                tf.nest.flatten(actual), tf.nest.flatten(expected)
            ):
                self.assertAllClose(got, wanted)


class HeinsenRoutingInputsTest(tf.test.TestCase):
    def test_scores_of_another_count_or_batch_are_refused(self):
        votes = _RNG.normal(size=(2, 5, 3, 1, 4)).astype("float32")
        betas = np.zeros((5, 3), "float32")
        for scores in (np.zeros((2, 4)), np.zeros((3, 5))):
            with self.assertRaisesRegex(ValueError, "`scores` of shape"):
                ops.heinsen_routing(scores, votes, betas, betas)
        with self.assertRaisesRegex(ValueError, "`beta_use` that broadcasts"):
            ops.heinsen_routing(np.zeros((2, 5)), votes, betas[:4], betas)
        with self.assertRaisesRegex(ValueError, "`mask` of shape"):
            ops.heinsen_routing(
                np.zeros((2, 5)), votes, betas, betas, mask=np.ones((2, 3))
            )


if __name__ == "__main__":
    tf.test.main()
