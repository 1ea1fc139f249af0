"""PresentClassesAccuracy: the top-k scores must be the k present classes."""

import numpy as np
from absl.testing import absltest

from keras_capsules import metrics
from tests.every_backend import TestCase


class PresentClassesAccuracyTest(TestCase):
    def test_counts_examples_with_all_present_classes_on_top(self):
        targets = np.array(
            [[1, 1, 0, 0], [1, 0, 0, 1], [0, 1, 0, 0]], "float32"
        )
        scores = np.array(
            [
                [0.9, 0.8, 0.1, 0.2],  # Both right.
                [0.9, 0.8, 0.1, 0.2],  # Second wrong.
                [0.1, 0.7, 0.3, 0.2],  # One present class, right.
            ],
            "float32",
        )
        metric = metrics.PresentClassesAccuracy()
        metric.update_state(targets, scores)
        self.assertAllClose(metric.result(), 2.0 / 3.0)


if __name__ == "__main__":
    absltest.main()
