"""PNG figures of capsule regression (eqs. 29 and 30)."""

import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_capsules import plots
from keras_capsules.layers import CapsuleRegression


class PlotsTest(tf.test.TestCase):
    def setUp(self):
        super().setUp()
        rng = np.random.default_rng(0)
        self.x = rng.normal(size=(60, 5)).astype("float32")
        self.y = np.arange(60) % 3
        self.directory = tempfile.mkdtemp()

    def test_squashed_latents_lie_in_unit_ball(self):
        layer = CapsuleRegression(3, 2)
        latents = plots.squashed_latents(layer, self.x)
        lengths = np.sum(latents**2, axis=(1, 2))
        self.assertAllClose(lengths, np.ones(60), rtol=1e-6)

    def test_prototype_indices_match_brute_force(self):
        layer = CapsuleRegression(3, 4)
        indices = plots.prototype_indices(layer, self.x, self.y)
        latents = plots.squashed_latents(layer, self.x) ** 2
        for i in range(3):
            for a in range(4):
                best = max(
                    (n for n in range(60) if self.y[n] == i),
                    key=lambda n: latents[n, i, a],
                )
                self.assertEqual(indices[i, a], best)

    def test_writes_png_files(self):
        layer = CapsuleRegression(3, 2)
        images = np.random.default_rng(1).random((60, 8, 8))
        for path in (
            plots.plot_latent_space(
                layer,
                self.x,
                self.y,
                os.path.join(self.directory, "latent.png"),
            ),
            plots.plot_prototypes(
                layer,
                self.x,
                self.y,
                images,
                os.path.join(self.directory, "prototypes.png"),
            ),
        ):
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_latent_space_needs_two_dimensions(self):
        with self.assertRaisesRegex(ValueError, "capsule_dim=3"):
            plots.plot_latent_space(
                CapsuleRegression(3, 3),
                self.x,
                self.y,
                os.path.join(self.directory, "x.png"),
            )


if __name__ == "__main__":
    tf.test.main()
