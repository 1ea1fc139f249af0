"""`InverseTemperatureSchedule` sets every EM routing layer's lambdas
from the current step, on every backend."""

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import callbacks, layers, losses
from tests.every_backend import TestCase


def tiny_model():
    inputs = keras.Input((6, 6, 2))
    capsules = layers.PrimaryMatrixCapsules(2)(inputs)
    capsules = layers.ConvMatrixCapsules(
        2, 3, routing=layers.EMRouting(num_iterations=2)
    )(capsules)
    logits, _ = layers.MatrixCapsuleEMRouting(3)(capsules)
    return keras.Model(inputs, keras.layers.Activation("sigmoid")(logits))


class InverseTemperatureScheduleTest(TestCase):
    def test_schedule_reaches_nested_layers_each_step(self):
        model = tiny_model()
        model.compile("sgd", losses.SpreadLoss())
        seen = []

        def schedule(step, num_iterations):
            seen.append((step, num_iterations))
            return [0.001 * (step + 1) * (t + 1) for t in range(num_iterations)]

        x = np.random.default_rng(0).normal(size=(4, 6, 6, 2))
        model.fit(
            x.astype("float32"),
            np.zeros(4, "int64"),
            batch_size=2,
            callbacks=[callbacks.InverseTemperatureSchedule(schedule)],
            verbose=0,
        )
        self.assertEqual(sorted(set(seen)), [(0, 2), (0, 3), (1, 2), (1, 3)])
        routing = model.layers[-2]
        self.assertAllClose(
            routing.inverse_temperature_weight, [0.002, 0.004, 0.006]
        )
        self.assertAllClose(
            model.layers[2].inverse_temperature_weight, [0.002, 0.004]
        )

    def test_wrong_length_and_no_layer_are_errors(self):
        model = tiny_model()
        model.compile("sgd", losses.SpreadLoss())
        x, y = np.zeros((2, 6, 6, 2), "float32"), np.zeros(2, "int64")
        bad = callbacks.InverseTemperatureSchedule(lambda step, n: [1.0])
        with self.assertRaisesRegex(ValueError, "one per iteration"):
            model.fit(x, y, callbacks=[bad], verbose=0)
        dense = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        dense.compile("sgd", "mse")
        schedule = callbacks.InverseTemperatureSchedule(lambda step, n: [])
        with self.assertRaisesRegex(ValueError, "no EM routing layer"):
            dense.fit(np.zeros((2, 2)), np.zeros(2), callbacks=[schedule])


if __name__ == "__main__":
    absltest.main()
