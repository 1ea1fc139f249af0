"""Vote-distance histograms of EM routing (Fig. 2)."""

import os
import tempfile
import warnings

import numpy as np
import tensorflow as tf

from keras_capsules import models, plots


class VoteDistancesTest(tf.test.TestCase):
    def setUp(self):
        super().setUp()
        self.model = models.small_matrix_capsnet(
            4, (24, 24, 1), routing="paper"
        )
        rng = np.random.default_rng(0)
        self.images = rng.normal(size=(2, 24, 24, 1)).astype("float32")

    def test_one_entry_per_iteration_and_assignments_sum_to_one(self):
        trace = plots.vote_distances(self.model, self.images)
        self.assertLen(trace, 3)
        for distances, routing in trace:
            self.assertEqual(distances.shape, (2, 64, 4))  # 2x2 grid x 16 types
            self.assertTrue(np.all(distances >= 0))
            self.assertAllClose(routing.sum(-1), np.ones((2, 64)), atol=1e-5)

    def test_routes_without_a_keras_warning(self):
        # A sub-model over `model.inputs` (a list) called with one tensor
        # made Keras warn that the inputs' structure did not match.
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            plots.vote_distances(self.model, self.images)

    def test_last_means_are_the_models_class_poses(self):
        import keras

        layer = self.model.get_layer("class_capsules")
        poses = keras.Model(self.model.input, layer.output[1])(self.images)
        capsules = keras.Model(self.model.input, layer.input)(self.images)
        votes = np.asarray(layer.votes(capsules[1]))
        distances, _ = plots.vote_distances(self.model, self.images)[-1]
        expected = np.linalg.norm(
            votes - np.reshape(poses, (2, 1, 4, 16)), axis=-1
        )
        self.assertAllClose(distances, expected, atol=1e-5)

    def test_writes_a_png(self):
        path = os.path.join(tempfile.mkdtemp(), "votes.png")
        plots.plot_vote_distances(self.model, self.images, path, list("abcd"))
        with open(path, "rb") as file:
            self.assertEqual(file.read(4), b"\x89PNG")


if __name__ == "__main__":
    tf.test.main()
