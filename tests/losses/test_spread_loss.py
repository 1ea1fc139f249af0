"""`SpreadLoss` and its margin schedule."""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import callbacks, losses
from tests.ops.test_spread_loss import spread_reference


class SpreadLossTest(tf.test.TestCase):
    def test_class_ids_and_one_hot_agree_with_the_equation(self):
        rng = np.random.default_rng(1)
        activations = rng.uniform(size=(4, 3)).astype("float32")
        labels = np.array([0, 2, 1, 1])
        loss = losses.SpreadLoss(0.5)
        expected = spread_reference(labels, activations, 0.5).mean()
        self.assertAllClose(loss(labels, activations), expected)
        self.assertAllClose(loss(np.eye(3)[labels], activations), expected)

    def test_margin_variable_changes_the_loss_and_the_config(self):
        loss = losses.SpreadLoss()
        activations = np.array([[0.6, 0.5]], "float32")
        self.assertAllClose(loss([0], activations), 0.1**2)
        loss.margin.assign(0.9)
        self.assertAllClose(loss([0], activations), 0.8**2)
        restored = losses.SpreadLoss.from_config(loss.get_config())
        self.assertAllClose(restored.margin, 0.9)


class SpreadLossMarginTest(tf.test.TestCase):
    def test_margin_rises_linearly_and_resumes_from_the_step_count(self):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        loss = losses.SpreadLoss()
        model.compile("sgd", loss)
        margins = []

        class Record(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                margins.append(float(loss.margin.numpy()))

        schedule = callbacks.SpreadLossMargin(loss, total_steps=4)
        x, y = np.zeros((6, 2), "float32"), np.zeros(6, "int64")
        model.fit(x, y, batch_size=1, callbacks=[schedule, Record()], verbose=0)
        self.assertAllClose(margins, [0.2, 0.375, 0.55, 0.725, 0.9, 0.9])
        self.assertAlmostEqual(schedule.margin_at(2), 0.55)
        with self.assertRaisesRegex(ValueError, "margin"):
            callbacks.SpreadLossMargin(keras.losses.MeanSquaredError(), 4)

    def test_compiled_model_with_spread_loss_saves_and_loads(self):
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
        model.compile("sgd", losses.SpreadLoss(0.3))
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        self.assertAllClose(restored.loss.margin, 0.3)


if __name__ == "__main__":
    tf.test.main()
