"""Start-of-training health of the matrix-capsule network: capsules that
can learn (some clearly off, some on, none saturated) and class routing
not yet committed, on random and on procedural images."""

import warnings

import keras
import numpy as np
import tensorflow as tf
from absl.testing import parameterized

from keras_capsules import layers, models
from keras_capsules.datasets.capsnet_experiments import load_experiment_arrays
from keras_capsules.models.matrix_capsnet_health import capsule_health


def images(kind):
    if kind == "random":
        rng = np.random.default_rng(0)
        return rng.uniform(size=(16, 28, 28, 1)).astype("float32")
    shapes, _ = load_experiment_arrays("procedural_shapes", "test", 16, 0)
    return shapes


def health(preset, kind, iterations=3):
    keras.utils.set_random_seed(0)
    routing = layers.EMRouting.preset(preset).replace(num_iterations=iterations)
    model = models.small_matrix_capsnet(
        input_shape=(28, 28, 1), routing=routing
    )
    with warnings.catch_warnings():  # none, Keras's about inputs included
        warnings.simplefilter("error", UserWarning)
        return capsule_health(model, images(kind))


def problems(state):
    """What keeps a model from learning, in words; empty when healthy."""
    found = []
    for name in ("conv_caps1", "conv_caps2"):
        layer = state[name]
        if layer["fraction_below_0.2"] < 0.02:
            found.append(f"{name}: no capsule clearly off")
        if layer["fraction_above_0.8"] < 0.02:
            found.append(f"{name}: no capsule clearly on")
        if layer["std"] < 0.1:
            found.append(f"{name}: activations all alike")
    for name in ("conv_caps1", "conv_caps2", "class_capsules"):
        if state[name]["max"] > 0.99:
            found.append(f"{name}: saturated activations")
    # Ten classes: 0.1 uncommitted, 1 when every child picked one class.
    if state["class_routing"]["mean_largest_assignment"] > 0.3:
        found.append("class routing committed before any learning")
    return found


class InitialHealthTest(tf.test.TestCase, parameterized.TestCase):
    @parameterized.parameters("random", "procedural")
    def test_default_recipe_starts_healthy(self, kind):
        self.assertEqual(problems(health("standardized", kind, 2)), [])

    @parameterized.parameters("random", "procedural")
    def test_paper_recipe_fails_the_check(self, kind):
        # Procedure 1 as written with lambda -> 0.001: every convolutional
        # activation near 0.52, and three iterations commit each child.
        found = problems(health("paper", kind))
        self.assertIn("conv_caps1: activations all alike", found)
        self.assertIn("class routing committed before any learning", found)


class PresetsTest(tf.test.TestCase):
    def test_presets_are_the_recipes_the_health_checks_measure(self):
        standardized = layers.EMRouting.preset("standardized")
        self.assertEqual(standardized.cost_normalization, "standardize")
        self.assertEqual(standardized.variance_floor, 5e-4)
        self.assertEqual(standardized.assignment_smoothing, 0.8)
        self.assertEqual(standardized.inverse_temperatures, (0.5, 1.0))
        paper = layers.EMRouting.preset("paper")
        self.assertEqual(paper.cost_normalization, "none")
        self.assertEqual(paper.assignment_smoothing, 0.0)
        self.assertAllClose(
            paper.inverse_temperatures, [1e-3 / 3, 2e-3 / 3, 1e-3]
        )

    def test_unknown_preset_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "preset 'fast'"):
            models.small_matrix_capsnet(routing="fast")


if __name__ == "__main__":
    tf.test.main()
