"""Bad input, integer arguments: NumPy integers are integers (a user's
`num_classes = labels.max() + 1` is one), bools and fractions are not, and
the refusal names the argument."""

import json

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import datasets, layers, ops, trainers


class IntegerArgumentsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters(np.int64, np.int32, int)
    def test_numpy_integers_are_integers_and_serialise(self, integer):
        routing = layers.DynamicRouting(integer(3), integer(4))
        self.assertIs(type(routing.num_capsules), int)
        config = routing.get_config()
        json.dumps(config)  # a NumPy integer would not serialise
        self.assertEqual(config["num_capsules"], 3)
        scores = layers.PresenceScores(integer(2))
        self.assertIs(type(scores.repeats), int)
        trainer = trainers.CapsuleRegressionEM(integer(3), integer(2))
        self.assertEqual((trainer.num_classes, trainer.capsule_dim), (3, 2))
        projection = datasets.PrincipalProjection(integer(5))
        self.assertIs(type(projection.num_components), int)

    @parameterized.parameters(True, 2.0, 0, -1, "3")
    def test_bools_fractions_and_non_positive_are_refused(self, value):
        for make, name in (
            (lambda v: layers.DynamicRouting(v, 4), "num_capsules"),
            (lambda v: layers.PresenceScores(v), "repeats"),
            (lambda v: trainers.CapsuleRegressionEM(3, v), "capsule_dim"),
            (lambda v: datasets.PrincipalProjection(v), "num_components"),
        ):
            with self.assertRaisesRegex(
                ValueError, f"`{name}` to be a positive integer.*{value!r}"
            ):
                make(value)

    def test_routing_ops_take_numpy_iteration_counts(self):
        votes = keras.random.normal((2, 5, 3, 4), seed=0)
        expected = ops.dynamic_routing(votes, num_iterations=2)
        self.assertAllClose(
            ops.dynamic_routing(votes, num_iterations=np.int64(2)), expected
        )
        with self.assertRaisesRegex(ValueError, "num_iterations"):
            ops.dynamic_routing(votes, num_iterations=1.5)

    def test_integer_beta_is_computed_in_floats(self):
        # Integer zeros came back before (issue 17, item 5).
        beta = np.array([0, 1, 5, 40])
        expected = ops.interpolating_coefficient(beta.astype("float32"), 2.5)
        values = ops.interpolating_coefficient(beta, 2.5)
        self.assertEqual(values.dtype, "float32")
        self.assertAllClose(values, expected)
        self.assertGreater(float(values[-1]), 0.9)


if __name__ == "__main__":
    tf.test.main()
