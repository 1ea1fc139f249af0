"""The paper's matrix-capsule networks and the CNN baseline."""

import os
import tempfile

import keras
import numpy as np
from absl.testing import absltest

from keras_capsules import layers, losses, models
from tests.every_backend import TestCase


class MatrixCapsNetTest(TestCase):
    def test_weight_counts_match_the_paper(self):
        # Paper: about 310K (A=B=C=D=32) and 68K (small); CNN baseline 4.2M.
        # count_params includes 3 inverse temperatures per routing layer.
        # Counts (smallNORB, 5 classes): conv1 832, primary caps 17,952,
        # each 32-type conv caps 147,456 + 64 betas + 3 lambdas, class
        # capsules 2,560 + 10 betas + 3 lambdas.
        self.assertEqual(
            models.matrix_capsnet(
                num_classes=5, routing="paper"
            ).count_params(),
            316_403,
        )
        self.assertEqual(
            models.small_matrix_capsnet(
                num_classes=5, routing="paper"
            ).count_params(),
            67_163,
        )
        self.assertEqual(
            models.viewpoint_cnn(5, (32, 32, 1)).count_params(), 4_252_549
        )

    def test_small_model_trains_saves_and_loads(self):
        model = models.small_matrix_capsnet(
            3, (24, 24, 1), routing=layers.EMRouting(num_iterations=2)
        )
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

    def test_every_routing_layer_takes_the_routing_settings(self):
        settings = layers.EMRouting(
            num_iterations=2, final_inverse_temperature=1.0
        )
        model = models.small_matrix_capsnet(3, (24, 24, 1), routing=settings)
        for name in ("conv_caps1", "conv_caps2", "class_capsules"):
            layer = model.get_layer(name)
            self.assertEqual(layer.routing, settings)
            self.assertAllClose(layer.inverse_temperature_weight, [0.5, 1.0])
        paper = models.small_matrix_capsnet(3, (24, 24, 1), routing="paper")
        self.assertEqual(
            paper.get_layer("conv_caps2").routing,
            layers.EMRouting.preset("paper"),
        )
        default = models.small_matrix_capsnet(3, (24, 24, 1))
        self.assertEqual(
            default.get_layer("class_capsules").routing,
            layers.EMRouting.preset("standardized"),
        )


if __name__ == "__main__":
    absltest.main()
