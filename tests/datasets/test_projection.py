"""Principal projection against NumPy's SVD."""

import numpy as np
import tensorflow as tf

from keras_capsules import datasets


class PrincipalProjectionTest(tf.test.TestCase):
    def test_matches_svd_directions(self):
        rng = np.random.default_rng(0)
        x = rng.normal(size=(300, 6)) @ rng.normal(size=(6, 6)) + 3.0
        projection = datasets.PrincipalProjection(3, center=True).fit(x)
        _, _, vt = np.linalg.svd(x - x.mean(0), full_matrices=False)
        expected = (x - x.mean(0)) @ vt[:3].T
        actual = projection.transform(x)
        signs = np.sign(np.sum(actual * expected, axis=0))
        self.assertAllClose(actual * signs, expected, rtol=1e-4, atol=1e-4)
        uncentred = datasets.PrincipalProjection(3, center=False).fit(x)
        self.assertAllClose(
            uncentred.transform(x), x @ uncentred.components, rtol=1e-5
        )

    def test_bad_arguments_raise(self):
        with self.assertRaisesRegex(ValueError, "Cannot keep 5 directions"):
            datasets.PrincipalProjection(5).fit(np.zeros((10, 4)))
        with self.assertRaisesRegex(ValueError, "Call `fit`"):
            datasets.PrincipalProjection(2).transform(np.zeros((3, 4)))


if __name__ == "__main__":
    tf.test.main()
