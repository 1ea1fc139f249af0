"""The paper's matrix-capsule networks and the CNN baseline."""

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_capsules import losses, models


class MatrixCapsNetTest(tf.test.TestCase):
    def test_weight_counts_match_the_paper(self):
        # Paper: about 310K (A=B=C=D=32) and 68K (small); CNN baseline 4.2M.
        # count_params includes 3 inverse temperatures per routing layer.
        # Counts (smallNORB, 5 classes): conv1 832, primary caps 17,952,
        # each 32-type conv caps 147,456 + 64 betas + 3 lambdas, class
        # capsules 2,560 + 10 betas + 3 lambdas.
        self.assertEqual(
            models.matrix_capsnet(num_classes=5, recipe="paper").count_params(),
            316_403,
        )
        self.assertEqual(
            models.small_matrix_capsnet(
                num_classes=5, recipe="paper"
            ).count_params(),
            67_163,
        )
        self.assertEqual(
            models.viewpoint_cnn(5, (32, 32, 1)).count_params(), 4_252_549
        )

    def test_small_model_trains_saves_and_loads(self):
        model = models.small_matrix_capsnet(3, (24, 24, 1), num_iterations=2)
        model.compile("adam", losses.SpreadLoss(), jit_compile=False)
        rng = np.random.default_rng(0)
        x = rng.normal(size=(4, 24, 24, 1)).astype("float32")
        y = np.array([0, 1, 2, 0])
        model.fit(x, y, epochs=1, verbose=0)
        activations = model.predict(x, verbose=0)
        self.assertEqual(activations.shape, (4, 3))
        self.assertTrue(np.all((activations >= 0) & (activations <= 1)))
        path = os.path.join(tempfile.mkdtemp(), "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        self.assertAllClose(restored.predict(x, verbose=0), activations)
        self.assertEqual(restored.get_layer("class_capsules").num_iterations, 2)

    def test_class_capsules_can_route_with_their_own_iterations(self):
        model = models.small_matrix_capsnet(
            3, (24, 24, 1), num_iterations=2, class_num_iterations=3
        )
        lambdas = {
            name: (
                model.get_layer(name).num_iterations,
                model.get_layer(name).inverse_temperatures,
            )
            for name in ("conv_caps1", "conv_caps2", "class_capsules")
        }
        self.assertEqual(lambdas["conv_caps1"], (2, [0.5, 1.0]))
        self.assertEqual(lambdas["conv_caps2"], (2, [0.5, 1.0]))
        self.assertEqual(lambdas["class_capsules"][0], 3)
        self.assertAllClose(lambdas["class_capsules"][1], [1 / 3, 2 / 3, 1.0])
        explicit = models.small_matrix_capsnet(
            3,
            (24, 24, 1),
            class_num_iterations=2,
            class_inverse_temperatures=[0.2, 0.4],
        )
        self.assertEqual(
            explicit.get_layer("class_capsules").inverse_temperatures,
            [0.2, 0.4],
        )
        with self.assertRaisesRegex(ValueError, "without `class_num_iter"):
            models.small_matrix_capsnet(class_inverse_temperatures=[1.0])


if __name__ == "__main__":
    tf.test.main()
