"""ActivationLogLoss: -log of the true class's activation (on every Keras
backend)."""

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import losses
from tests.every_backend import TestCase, numpy


class ActivationLogLossTest(TestCase):
    def test_matches_numpy_on_activations_and_logits(self):
        activations = np.random.default_rng(0).uniform(0.01, 0.99, (4, 3))
        labels = np.array([0, 2, 1, 2])
        expected = -np.log(activations[np.arange(4), labels]).mean()
        logits = np.log(activations) - np.log1p(-activations)
        for loss, y_pred in (
            (losses.ActivationLogLoss(), activations),
            (losses.ActivationLogLoss(from_logits=True), logits),
        ):
            self.assertAllClose(loss(labels, y_pred), expected, atol=1e-6)
            one_hot = np.eye(3)[labels]
            self.assertAllClose(loss(one_hot, y_pred), expected, atol=1e-6)

    def test_extreme_logits_give_finite_losses_and_gradients(self):
        loss = losses.ActivationLogLoss(from_logits=True)
        logits = keras.Variable(np.array([[-200.0, 200.0]], "float32"))
        self.assertAllClose(loss(np.array([0]), logits), 200.0, rtol=1e-6)
        self.assertAllClose(loss(np.array([1]), logits), 0.0, atol=1e-6)
        zero = losses.ActivationLogLoss()(np.array([0]), np.zeros((1, 2)))
        self.assertTrue(np.isfinite(numpy(zero)))

    def test_round_trips_its_config(self):
        loss = losses.ActivationLogLoss(from_logits=True, name="nll")
        restored = keras.losses.deserialize(keras.losses.serialize(loss))
        self.assertIsInstance(restored, losses.ActivationLogLoss)
        self.assertTrue(restored.from_logits)
        self.assertEqual(restored.name, "nll")

    def test_bad_labels_are_refused(self):
        with self.assertRaisesRegex(ValueError, "ActivationLogLoss"):
            losses.ActivationLogLoss()(np.array([3]), np.full((1, 2), 0.5))


if __name__ == "__main__":
    absltest.main()
