"""The procedural dataset: deterministic, posed, split by viewpoint."""

import numpy as np
import tensorflow as tf

from keras_capsules import datasets
from keras_capsules.datasets import procedural_shapes as shapes_module


def _to_segment(x, y, stroke):
    """Distance from `(x, y)` to the segment `(x0, y0, x1, y1)`."""
    x0, y0, x1, y1 = stroke
    dx, dy = x1 - x0, y1 - y0
    t = min(max(((x - x0) * dx + (y - y0) * dy) / (dx**2 + dy**2), 0), 1)
    return np.hypot(x - x0 - t * dx, y - y0 - t * dy)


class ProceduralShapesTest(tf.test.TestCase):
    def test_deterministic_given_seed(self):
        a = datasets.load_procedural_shapes("train", num_examples=20, seed=3)
        b = datasets.load_procedural_shapes("train", num_examples=20, seed=3)
        c = datasets.load_procedural_shapes("train", num_examples=20, seed=4)
        for key in ("image", "label", "pose"):
            self.assertAllEqual(a[key], b[key])
        self.assertNotAllClose(a["image"], c["image"])

    def test_shapes_ranges_and_viewpoints(self):
        familiar = datasets.load_procedural_shapes("test", num_examples=200)
        novel = datasets.load_procedural_shapes("test_novel", num_examples=200)
        self.assertEqual(familiar["image"].shape, (200, 28, 28, 1))
        self.assertEqual(familiar["image"].dtype, np.float32)
        self.assertBetween(float(familiar["image"].min()), 0.0, 1.0)
        self.assertGreater(float(familiar["image"].max()), 0.9)
        self.assertLessEqual(np.abs(familiar["pose"][:, 0]).max(), np.pi / 6)
        self.assertGreater(np.abs(novel["pose"][:, 0]).min(), np.pi / 6)
        self.assertLessEqual(np.abs(novel["pose"][:, 0]).max(), np.pi)
        self.assertLen(np.unique(familiar["label"]), len(datasets.SHAPE_NAMES))

    def test_pose_moves_the_object(self):
        poses = np.array(
            [
                [0.0, 1.0, 0.0, 0.0],
                [np.pi / 2, 1.0, 0.0, 0.0],
                [0.0, 1.0, 2.0, 0.0],
            ],
            np.float32,
        )
        images = datasets.render_shapes([0, 0, 0], poses)[..., 0]
        # A quarter turn of the "tee" is its transpose-like image, not itself.
        self.assertGreater(np.abs(images[0] - images[1]).sum(), 50.0)
        # A shift of 2 pixels to the right moves the ink by 2 columns.
        self.assertAllClose(images[2][:, 4:20], images[0][:, 2:18], atol=0.05)

    def test_ink_is_the_nearest_strokes_edge_at_every_pixel(self):
        # Pixel by pixel in float64, as the module docstring describes an
        # image: a pixel's ink is a soft edge at a fixed distance from the
        # object's nearest stroke, in the object's own frame.
        labels = np.array([0, 5, 9])
        poses = np.array(
            [[0.3, 0.9, 1.0, -2.0], [-2.5, 0.75, 0.0, 0.5], [1.0, 1.0, 0, 0]],
            np.float32,
        )
        size = 11
        images = datasets.render_shapes(labels, poses, size)[..., 0]
        half = (size - 1) / 2
        strokes = list(shapes_module._OBJECTS.values())
        for image, label, (angle, scale, sx, sy) in zip(images, labels, poses):
            expected = np.zeros((size, size))
            for row in range(size):
                for column in range(size):
                    u = (column - half - sx) / half
                    v = (half - row - sy) / half
                    x = (np.cos(angle) * u + np.sin(angle) * v) / scale
                    y = (-np.sin(angle) * u + np.cos(angle) * v) / scale
                    distance = min(
                        _to_segment(x, y, stroke) for stroke in strokes[label]
                    )
                    expected[row, column] = 1 / (
                        1 + np.exp((distance - 0.12) / 0.04)
                    )
            # The renderer's float32 distances (a few epsilons off) times
            # the edge's steepest slope, 1 / (4 * 0.04) = 6.25.
            self.assertAllClose(image, expected, atol=2e-6, rtol=0)

    def test_bad_split_raises(self):
        with self.assertRaisesRegex(ValueError, "Unknown split"):
            datasets.load_procedural_shapes("valid")


if __name__ == "__main__":
    tf.test.main()
