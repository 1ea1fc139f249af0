"""The CapsuleRegression layer: training, inspection, saving, serving."""

import doctest
import importlib
import os
import tempfile

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import ops as capsule_ops
from keras_capsules.layers import CapsuleRegression
from tests.every_backend import BACKEND, TestCase, numpy
from tests.fresh_process import run_python


def toy_problem(n=240, p=6, m=3, seed=0):
    """Classes separated along different input directions."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, m, n)
    x = rng.normal(0.0, 0.3, (n, p)).astype("float32")
    x[np.arange(n), y] += 2.0
    return x, y


class CapsuleRegressionLayerTest(TestCase):
    def test_output_is_eq_16_of_prior_means(self):
        layer = CapsuleRegression(3, 2)
        x, _ = toy_problem(8)
        probabilities = layer(x)
        means = layer.prior_means(x)
        self.assertEqual(means.shape, (8, 3, 2))
        kernel = numpy(layer.kernel)
        self.assertAllClose(
            means, np.einsum("bp,pjd->bjd", x, kernel), rtol=1e-5
        )
        self.assertAllClose(
            probabilities,
            capsule_ops.capsule_regression_probabilities(means),
            rtol=1e-6,
        )

    def test_offset_and_centring(self):
        layer = CapsuleRegression(2, 2, use_offset=True, center_inputs=True)
        x, _ = toy_problem(10, p=4, m=2)
        layer.adapt(x)
        self.assertAllClose(layer.input_mean, x.mean(0), rtol=1e-5)
        layer.offset.assign(np.ones((2, 2)))
        expected = (
            np.einsum("bp,pjd->bjd", x - x.mean(0), numpy(layer.kernel)) + 1.0
        )
        self.assertAllClose(
            layer.prior_means(x), expected, rtol=1e-5, atol=1e-6
        )

    def test_sequential_add_and_fit_learns(self):
        x, y = toy_problem()
        model = keras.Sequential([keras.Input((6,))])
        model.add(CapsuleRegression(3, 2))
        model.compile(
            keras.optimizers.Adam(0.05),
            "sparse_categorical_crossentropy",
            metrics=["accuracy"],
            jit_compile=True,
        )
        history = model.fit(x, y, epochs=15, batch_size=32, verbose=0)
        self.assertLess(
            history.history["loss"][-1], 0.7 * history.history["loss"][0]
        )
        self.assertGreater(history.history["accuracy"][-1], 0.9)

    def test_posterior_means_follow_eq_19(self):
        layer = CapsuleRegression(3, 2)
        x, y = toy_problem(5)
        expected = capsule_ops.capsule_regression_posterior_means(
            layer.prior_means(x), y
        )
        self.assertAllClose(layer.posterior_means(x, y), expected)

    def test_trained_model_serves_in_fresh_process(self):
        if BACKEND != "tensorflow":
            self.skipTest("SavedModel export traces with TensorFlow.")
        x, y = toy_problem()
        model = keras.Sequential([keras.Input((6,)), CapsuleRegression(3, 2)])
        model.compile("adam", "sparse_categorical_crossentropy")
        model.fit(x, y, epochs=2, verbose=0)
        directory = tempfile.mkdtemp()
        keras_path = os.path.join(directory, "model.keras")
        export_path = os.path.join(directory, "export")
        model.save(keras_path)
        model.export(export_path)
        np.save(os.path.join(directory, "x.npy"), x[:4])
        np.save(os.path.join(directory, "expected.npy"), model(x[:4]))
        result = run_python(f"""
            import numpy as np, tensorflow as tf, keras
            import keras_capsules  # noqa: registers the layer
            x = np.load({os.path.join(directory, "x.npy")!r})
            expected = np.load({os.path.join(directory, "expected.npy")!r})
            served = tf.saved_model.load({export_path!r})
            np.testing.assert_allclose(served.serve(x), expected, rtol=1e-5)
            loaded = keras.models.load_model({keras_path!r})
            np.testing.assert_allclose(loaded(x), expected, rtol=1e-6)
            print("served")
            """)
        self.assertIn("served", result.stdout, result.stderr[-2000:])

    def test_docstring_example_runs(self):
        module = importlib.import_module(
            "keras_capsules.layers.capsule_regression"
        )
        result = doctest.testmod(
            module, extraglobs={"np": np, "keras": keras}, verbose=False
        )
        self.assertGreater(result.attempted, 0)
        self.assertEqual(result.failed, 0)

    def test_bad_arguments_raise(self):
        with self.assertRaisesRegex(ValueError, "num_classes` >= 2"):
            CapsuleRegression(1, 2)
        with self.assertRaisesRegex(
            ValueError, "capsule_dim` to be a positive"
        ):
            CapsuleRegression(3, 0)
        with self.assertRaisesRegex(ValueError, r"shape \(batch, p\)"):
            CapsuleRegression(3, 2)(np.zeros((2, 4, 4), "float32"))
        with self.assertRaisesRegex(ValueError, "center_inputs=True"):
            CapsuleRegression(3, 2).adapt(np.zeros((2, 4)))


if __name__ == "__main__":
    absltest.main()
