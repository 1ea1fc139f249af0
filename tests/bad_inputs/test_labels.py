"""Bad input, labels: class ids out of range, negative or fractional,
targets that are not 0/1, multi-hot rows where one class is expected,
and ids where targets are expected are refused by the losses, their ops
and `CapsuleRegression.posterior_means` (eager: ValueError; graph: an
assertion), and pass silently only under XLA, as documented."""

import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import layers, losses, ops

_LENGTHS = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.4]], "float32")


class LossLabelsTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.product(
        loss=[losses.MarginLoss, losses.SpreadLoss],
        labels=[[0, 3], [-1, 1], [0.0, 1.5], [0, 50]],
    )
    def test_bad_class_ids_are_refused_in_eager_mode(self, loss, labels):
        with self.assertRaisesRegex(
            ValueError,
            rf"`{loss.__name__}` expects (class ids in \[0, 3\)|whole-number)",
        ):
            loss()(np.array(labels), _LENGTHS)

    @parameterized.parameters(losses.MarginLoss, losses.SpreadLoss)
    def test_bad_class_ids_are_refused_in_a_graph(self, loss):
        instance = loss()
        function = tf.function(lambda y, p: instance(y, p))
        with self.assertRaisesRegex(
            tf.errors.InvalidArgumentError, r"class ids in \[0, 3\)"
        ):
            function(tf.constant([0, 3]), tf.constant(_LENGTHS))

    def test_under_xla_an_id_out_of_range_counts_as_no_class(self):
        loss = losses.MarginLoss()
        function = tf.function(lambda y, p: loss(y, p), jit_compile=True)
        out_of_range = function(tf.constant([0, 3]), tf.constant(_LENGTHS))
        targets = np.array([[1, 0, 0], [0, 0, 0]], "float32")
        self.assertAllClose(out_of_range, loss(targets, _LENGTHS))

    def test_targets_must_be_zeros_and_ones(self):
        with self.assertRaisesRegex(ValueError, "targets of 0s and 1s"):
            losses.MarginLoss()(np.full((2, 3), 0.5), _LENGTHS)

    def test_spread_loss_takes_one_class_per_example(self):
        multi_hot = np.array([[1, 1, 0], [0, 1, 0]], "float32")
        with self.assertRaisesRegex(ValueError, "one 1 per row"):
            losses.SpreadLoss()(multi_hot, _LENGTHS)
        # The margin loss takes several present classes (MultiMNIST).
        self.assertTrue(np.isfinite(losses.MarginLoss()(multi_hot, _LENGTHS)))

    def test_good_ids_of_any_numeric_dtype_agree(self):
        for loss in (losses.MarginLoss(), losses.SpreadLoss()):
            expected = loss(np.array([0, 2]), _LENGTHS)
            for labels in ([[0], [2]], np.array([0.0, 2.0], "float32")):
                self.assertAllClose(loss(np.array(labels), _LENGTHS), expected)


class OpTargetsTest(tf.test.TestCase):
    def test_ids_where_targets_are_expected_do_not_broadcast(self):
        # batch == n: (batch,) ids would broadcast against (batch, n).
        lengths = np.full((3, 3), 0.5, "float32")
        for op, name in (
            (ops.margin_loss, "margin_loss"),
            (lambda t, a: ops.spread_loss(t, a, 0.2), "spread_loss"),
        ):
            with self.assertRaisesRegex(
                ValueError, rf"`{name}` expects `targets` of the shape"
            ):
                op(np.array([0, 1, 2]), lengths)


class PosteriorMeansLabelsTest(tf.test.TestCase):
    def test_out_of_range_labels_are_refused(self):
        layer = layers.CapsuleRegression(3, 2)
        features = np.random.default_rng(0).normal(size=(2, 5))
        layer(features)
        with self.assertRaisesRegex(ValueError, r"class ids in \[0, 3\)"):
            layer.posterior_means(features, np.array([0, 3]))
        means = layer.posterior_means(features, np.array([0, 2]))
        self.assertEqual(means.shape, (2, 3, 2))


if __name__ == "__main__":
    tf.test.main()
