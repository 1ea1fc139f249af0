"""Reconstruction and capsule-perturbation figures (Sabour et al. Figs. 3-4)."""

import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_capsules import plots


def decode_sum(masked_capsules):
    """A stand-in decoder: image k is filled with the sum of its capsules."""
    total = masked_capsules.sum(axis=(1, 2))
    return np.ones((len(masked_capsules), 4, 4)) * total[:, None, None]


class ReconstructionPlotsTest(tf.test.TestCase):
    def test_perturbation_grid_shifts_one_dimension_per_row(self):
        capsules = np.arange(6, dtype=np.float32).reshape(3, 2)  # n=3, d=2
        deltas = np.array([-0.5, 0.0, 0.5])
        grid = plots.perturbation_grid(decode_sum, capsules, 1, deltas)
        self.assertEqual(grid.shape, (2, 3, 4, 4))
        # Only capsule 1 (entries 2 and 3, sum 5) is kept, then shifted.
        self.assertAllClose(
            grid[:, :, 0, 0], 5.0 + deltas[None, :].repeat(2, 0)
        )

    def test_writes_png_files(self):
        directory = tempfile.mkdtemp()
        rng = np.random.default_rng(0)
        images = rng.uniform(size=(3, 8, 8, 1))
        path = os.path.join(directory, "reconstructions.png")
        plots.plot_reconstructions(
            images, images * 0.5, path, [0, 1, 2], [0, 1, 1]
        )
        path_grid = os.path.join(directory, "perturbations.png")
        plots.plot_capsule_perturbations(
            decode_sum, rng.normal(size=(3, 2)), 0, path_grid
        )
        for written in (path, path_grid):
            with open(written, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    tf.test.main()
