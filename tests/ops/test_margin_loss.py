"""The margin loss against a loop-by-loop NumPy version of eq. 4."""

import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase


def margin_loss_reference(targets, lengths, m_plus=0.9, m_minus=0.1, lam=0.5):
    losses = []
    for t_row, v_row in zip(targets, lengths):
        total = 0.0
        for t, v in zip(t_row, v_row):
            total += t * max(0.0, m_plus - v) ** 2
            total += lam * (1 - t) * max(0.0, v - m_minus) ** 2
        losses.append(total)
    return np.array(losses)


class MarginLossOpTest(TestCase):
    def test_matches_reference(self):
        rng = np.random.default_rng(0)
        lengths = rng.uniform(0, 1, (6, 5))
        targets = np.eye(5)[rng.integers(0, 5, 6)]
        targets[0, 3] = 1.0  # Two present classes.
        self.assertAllClose(
            capsule_ops.margin_loss(targets, lengths),
            margin_loss_reference(targets, lengths),
        )
        self.assertAllClose(
            capsule_ops.margin_loss(targets, lengths, 0.8, 0.2, 1.0),
            margin_loss_reference(targets, lengths, 0.8, 0.2, 1.0),
        )

    def test_zero_inside_the_margins(self):
        lengths = np.array([[0.95, 0.05, 0.1]])
        targets = np.array([[1.0, 0.0, 0.0]])
        self.assertAllEqual(capsule_ops.margin_loss(targets, lengths), [0.0])


if __name__ == "__main__":
    absltest.main()
