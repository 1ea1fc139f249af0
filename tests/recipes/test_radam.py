"""RAdam against a NumPy version of Liu et al. (2019), Algorithm 2."""

import math

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import recipes


def radam_reference(theta, gradients, lr, beta_1, beta_2, epsilon):
    """Algorithm 2, step by step; `beta_1` is a list, one value per step."""
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    rho_inf = 2 / (1 - beta_2) - 1
    for t, g in enumerate(gradients, start=1):
        b1 = beta_1[t - 1]
        m = b1 * m + (1 - b1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_hat = m / (1 - b1**t)
        rho = rho_inf - 2 * t * beta_2**t / (1 - beta_2**t)
        if rho > 4:
            l_t = math.sqrt(1 - beta_2**t) / (np.sqrt(v) + epsilon)
            r_t = math.sqrt(
                (rho - 4)
                * (rho - 2)
                * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho)
            )
            theta = theta - lr * r_t * m_hat * l_t
        else:
            theta = theta - lr * m_hat
    return theta


class RAdamTest(tf.test.TestCase):
    def run_steps(self, optimizer, gradients, start):
        variable = keras.Variable(start)
        for g in gradients:
            optimizer.apply([tf.constant(g)], [variable])
        return variable.numpy()

    def test_matches_the_algorithm_through_the_warm_up(self):
        rng = np.random.default_rng(0)
        start = rng.normal(size=(3, 4))
        gradients = rng.normal(size=(12, 3, 4))  # rho_t > 4 from step 6.
        got = self.run_steps(
            recipes.RAdam(0.01, beta_1=0.9, beta_2=0.999), gradients, start
        )
        want = radam_reference(start, gradients, 0.01, [0.9] * 12, 0.999, 1e-8)
        self.assertAllClose(got, want, rtol=1e-5, atol=1e-6)
        # Not Adam: the first steps are plain momentum steps.
        adam = self.run_steps(keras.optimizers.Adam(0.01), gradients, start)
        self.assertNotAllClose(got, adam, atol=1e-3)

    def test_scheduled_beta_1(self):
        rng = np.random.default_rng(1)
        start = rng.normal(size=(5,))
        gradients = rng.normal(size=(10, 5))
        schedule = recipes.OneCycle(10, 0.999, 0.9)
        betas = [float(schedule(step)) for step in range(10)]
        got = self.run_steps(
            recipes.RAdam(0.01, beta_1=schedule), gradients, start
        )
        want = radam_reference(start, gradients, 0.01, betas, 0.999, 1e-8)
        self.assertAllClose(got, want, rtol=1e-5, atol=1e-6)

    def test_config_round_trip_with_schedules(self):
        optimizer = recipes.one_cycle_radam(100)
        restored = recipes.RAdam.from_config(optimizer.get_config())
        self.assertIsInstance(restored.beta_1, recipes.OneCycle)
        self.assertEqual(
            restored.beta_1.get_config(), optimizer.beta_1.get_config()
        )


if __name__ == "__main__":
    tf.test.main()
