"""The procedural dataset: deterministic, posed, split by viewpoint."""

import numpy as np
import tensorflow as tf

from keras_capsules import datasets


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

    def test_bad_split_raises(self):
        with self.assertRaisesRegex(ValueError, "Unknown split"):
            datasets.load_procedural_shapes("valid")


if __name__ == "__main__":
    tf.test.main()
