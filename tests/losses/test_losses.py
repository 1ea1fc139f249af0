"""MarginLoss and ReconstructionLoss: label formats, reduction, config."""

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import losses
from tests.every_backend import TestCase
from tests.ops.test_margin_loss import margin_loss_reference


class MarginLossTest(TestCase):
    def setUp(self):
        rng = np.random.default_rng(0)
        self.lengths = rng.uniform(0, 1, (4, 3)).astype("float32")
        self.labels = np.array([0, 2, 1, 2])
        self.expected = margin_loss_reference(
            np.eye(3)[self.labels], self.lengths
        )

    def test_class_ids_one_hot_and_column_labels_agree(self):
        loss = losses.MarginLoss()
        for labels in (
            self.labels,
            np.eye(3)[self.labels],
            self.labels[:, None],
        ):
            self.assertAllClose(
                loss(labels, self.lengths), self.expected.mean()
            )

    def test_multi_hot_targets(self):
        targets = np.array(
            [[1, 1, 0], [0, 1, 1], [1, 0, 1], [0, 0, 1]], "float32"
        )
        self.assertAllClose(
            losses.MarginLoss(reduction=None)(targets, self.lengths),
            margin_loss_reference(targets, self.lengths),
        )

    def test_config_round_trip(self):
        loss = losses.MarginLoss(positive_margin=0.8, negative_weight=0.25)
        restored = keras.losses.deserialize(keras.losses.serialize(loss))
        self.assertEqual(restored.get_config(), loss.get_config())
        self.assertAllClose(
            restored(self.labels, self.lengths), loss(self.labels, self.lengths)
        )

    def test_from_logits_takes_the_logits_of_the_lengths(self):
        logits = np.log(self.lengths / (1 - self.lengths))
        loss = losses.MarginLoss(from_logits=True)
        self.assertAllClose(
            loss(self.labels, logits), self.expected.mean(), rtol=1e-5
        )
        self.assertTrue(
            losses.MarginLoss.from_config(loss.get_config()).from_logits
        )

    def test_rejects_bad_label_shape(self):
        with self.assertRaisesRegex(ValueError, r"class ids \(batch,\)"):
            losses.MarginLoss()(np.zeros((4, 3, 2)), self.lengths)


class ReconstructionLossTest(TestCase):
    def test_per_example_sum_of_squares(self):
        rng = np.random.default_rng(1)
        images = rng.uniform(size=(3, 4, 4, 1)).astype("float32")
        decoded = rng.uniform(size=(3, 16)).astype("float32")
        expected = ((images.reshape(3, -1) - decoded) ** 2).sum(axis=1)
        self.assertAllClose(
            losses.ReconstructionLoss(reduction=None)(images, decoded), expected
        )
        self.assertAllClose(
            losses.ReconstructionLoss()(images, decoded), expected.mean()
        )


if __name__ == "__main__":
    absltest.main()
