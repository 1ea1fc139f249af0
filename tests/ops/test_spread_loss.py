"""The spread loss against eq. 3 written with loops."""

import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from tests.every_backend import TestCase


def spread_reference(labels, activations, margin):
    losses = []
    for target, a in zip(labels, activations):
        losses.append(
            sum(
                max(0.0, margin - (a[target] - a[i])) ** 2
                for i in range(len(a))
                if i != target
            )
        )
    return np.array(losses)


class SpreadLossOpTest(TestCase):
    def test_matches_equation_3(self):
        rng = np.random.default_rng(0)
        activations = rng.uniform(size=(6, 5))
        labels = rng.integers(0, 5, 6)
        activations[0] = [0.9, 0.1, 0.1, 0.1, 0.1]  # every gap beyond m
        labels[0] = 0
        for margin in (0.2, 0.55, 0.9):
            got = capsule_ops.spread_loss(
                np.eye(5)[labels], activations, margin
            )
            self.assertAllClose(
                got, spread_reference(labels, activations, margin)
            )
        self.assertAllClose(
            capsule_ops.spread_loss(np.eye(5)[labels], activations, 0.2)[0],
            0.0,
        )


if __name__ == "__main__":
    absltest.main()
