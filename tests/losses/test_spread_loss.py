"""`SpreadLoss` and its margin schedule."""

import os
import tempfile

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import callbacks, losses
from tests.every_backend import TestCase
from tests.ops.test_spread_loss import spread_reference


class SpreadLossTest(TestCase):
    def test_class_ids_and_one_hot_agree_with_the_equation(self):
        rng = np.random.default_rng(1)
        activations = rng.uniform(size=(4, 3)).astype("float32")
        labels = np.array([0, 2, 1, 1])
        loss = losses.SpreadLoss(0.5)
        expected = spread_reference(labels, activations, 0.5).mean()
        self.assertAllClose(loss(labels, activations), expected)
        self.assertAllClose(loss(np.eye(3)[labels], activations), expected)

    def test_from_logits_takes_the_logits_of_the_activations(self):
        activations = np.array([[0.3, 0.6, 0.1], [0.2, 0.7, 0.9]], "f4")
        logits = np.log(activations / (1 - activations))
        loss = losses.SpreadLoss(0.5, from_logits=True)
        self.assertAllClose(
            loss([0, 2], logits),
            spread_reference(np.array([0, 2]), activations, 0.5).mean(),
            rtol=1e-5,
        )
        self.assertTrue(
            losses.SpreadLoss.from_config(loss.get_config()).from_logits
        )

    def test_margin_variable_changes_the_loss_and_the_config(self):
        loss = losses.SpreadLoss()
        activations = np.array([[0.6, 0.5]], "float32")
        self.assertAllClose(loss([0], activations), 0.1**2)
        loss.margin.assign(0.9)
        self.assertAllClose(loss([0], activations), 0.8**2)
        restored = losses.SpreadLoss.from_config(loss.get_config())
        self.assertAllClose(restored.margin, 0.9)


class SpreadLossMarginTest(TestCase):
    def test_margin_rises_linearly_and_resumes_from_the_step_count(self):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        loss = losses.SpreadLoss()
        model.compile("sgd", loss)
        margins = []

        class Record(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                margins.append(logs["spread_margin"])

        schedule = callbacks.SpreadLossMargin(loss, total_steps=4)
        x, y = np.zeros((6, 2), "float32"), np.zeros(6, "int64")
        model.fit(x, y, batch_size=1, callbacks=[schedule, Record()], verbose=0)
        self.assertAllClose(margins, [0.2, 0.375, 0.55, 0.725, 0.9, 0.9])
        self.assertAlmostEqual(schedule.margin_at(2), 0.55)
        with self.assertRaisesRegex(ValueError, "margin"):
            callbacks.SpreadLossMargin(keras.losses.MeanSquaredError(), 4)

    def test_the_compiled_step_uses_each_step_margin(self):
        # A variable of the loss alone would be read once, when JAX traces
        # the step; the model's margin metric carries it into each step.
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        loss = losses.SpreadLoss()
        model.compile(keras.optimizers.SGD(0.0), loss, jit_compile="auto")
        x = np.array([[0.5, -1.0]], "float32")
        y = np.array([1])
        schedule = callbacks.SpreadLossMargin(loss, total_steps=4)
        history = model.fit(
            x, y, epochs=5, callbacks=[schedule], verbose=0
        ).history
        scores = model.predict(x, verbose=0)  # unchanged: a rate of 0
        expected = []
        for margin in (0.2, 0.375, 0.55, 0.725, 0.9):
            loss.margin.assign(margin)
            expected.append(float(loss(y, scores)))
        self.assertAllClose(history["loss"], expected, rtol=1e-5)
        self.assertAllClose(
            history["spread_margin"], [0.2, 0.375, 0.55, 0.725, 0.9]
        )

    def test_the_margin_logged_survives_validation(self):
        # On JAX, validation's compiled step takes over the metric
        # variables' buffers: a logged margin that was the variable's own
        # buffer was deleted before the epoch's end read it.
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        loss = losses.SpreadLoss()
        model.compile(keras.optimizers.SGD(0.0), loss, jit_compile="auto")
        x = np.array([[0.5, -1.0]], "float32")
        y = np.array([1])
        schedule = callbacks.SpreadLossMargin(loss, total_steps=2)
        history = model.fit(
            x,
            y,
            epochs=3,
            validation_data=(x, y),
            callbacks=[schedule],
            verbose=0,
        ).history
        self.assertAllClose(history["spread_margin"], [0.2, 0.55, 0.9])

    def test_sigmoid_margin_follows_the_official_formula_by_step(self):
        loss = losses.SpreadLoss()
        schedule = callbacks.SigmoidSpreadLossMargin(loss)

        def official(step):  # 0.2 + 0.79 sigmoid(min(10, step / 50000 - 4))
            return 0.2 + 0.79 / (1 + np.exp(-min(10.0, step / 50_000 - 4)))

        for step in (0, 1_875, 50_000, 200_000, 10**6):
            self.assertAlmostEqual(schedule.margin_at(step), official(step))
        self.assertAlmostEqual(schedule.margin_at(0), 0.2142, places=4)
        self.assertAlmostEqual(
            schedule.margin_at(10**7), 0.2 + 0.79 / (1 + np.exp(-10.0))
        )
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        model.compile("sgd", loss)
        x, y = np.zeros((3, 2), "float32"), np.zeros(3, "int64")
        model.fit(x, y, batch_size=1, callbacks=[schedule], verbose=0)
        self.assertAllClose(loss.margin, official(2))
        with self.assertRaisesRegex(ValueError, "steps_per_unit"):
            callbacks.SigmoidSpreadLossMargin(loss, steps_per_unit=0)

    def test_compiled_model_with_spread_loss_saves_and_loads(self):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        model.compile("sgd", losses.SpreadLoss(0.3))
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        self.assertAllClose(restored.loss.margin, 0.3)


if __name__ == "__main__":
    absltest.main()
