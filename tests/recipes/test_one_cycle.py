"""The one-cycle schedule: linear rise, cosine return."""

import math

import numpy as np
import tensorflow as tf

from keras_capsules import recipes


class OneCycleTest(tf.test.TestCase):
    def test_values_at_the_paper_points(self):
        schedule = recipes.OneCycle(1000, 1e-5, 5e-4)
        values = {
            step: float(schedule(step))
            for step in (0, 50, 100, 550, 1000, 1200)
        }
        self.assertAllClose(values[0], 1e-5)
        self.assertAllClose(values[50], (1e-5 + 5e-4) / 2)  # Linear rise.
        self.assertAllClose(values[100], 5e-4)
        self.assertAllClose(values[550], (1e-5 + 5e-4) / 2)  # Cosine middle.
        self.assertAllClose(values[1000], 1e-5)
        self.assertAllClose(values[1200], 1e-5)

    def test_cosine_shape(self):
        schedule = recipes.OneCycle(110, 0.0, 1.0, warmup_fraction=1 / 11)
        steps = np.arange(10, 111)
        expected = 0.5 * (1 + np.cos(math.pi * (steps - 10) / 100))
        self.assertAllClose(
            [float(schedule(s)) for s in steps], expected, atol=1e-6
        )

    def test_beta_1_falls_while_the_rate_rises_as_in_the_authors_code(self):
        # glassroom/heinsen_routing: RAdam's betas (0.9, 0.999), and the
        # cycle takes beta_1 down to 0.9 x 0.9 and back.
        optimizer = recipes.one_cycle_radam(200)
        self.assertAllClose(float(optimizer.beta_1(0)), 0.9)
        self.assertAllClose(float(optimizer.beta_1(10)), 0.855)
        self.assertAllClose(float(optimizer.beta_1(20)), 0.81)
        self.assertAllClose(float(optimizer.beta_1(200)), 0.9)
        self.assertAllClose(float(optimizer.beta_2), 0.999)
        self.assertAllClose(float(optimizer.learning_rate), 1e-5)

    def test_the_paper_texts_beta_1_is_an_option(self):
        optimizer = recipes.one_cycle_radam(
            200, beta_1=recipes.PAPER_TEXT_BETA_1
        )
        self.assertAllClose(float(optimizer.beta_1(0)), 0.999)
        self.assertAllClose(float(optimizer.beta_1(20)), 0.8991)

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "total_steps"):
            recipes.OneCycle(0, 1.0, 2.0)
        with self.assertRaisesRegex(ValueError, "warmup_fraction"):
            recipes.OneCycle(10, 1.0, 2.0, warmup_fraction=1.5)


if __name__ == "__main__":
    tf.test.main()
