"""`model.export` works on the subclassed models as their factories
return them, before any real call (issue 17, item 9)."""

import os

import numpy as np
import tensorflow as tf

from keras_capsules import models


class ExportBeforeCallTest(tf.test.TestCase):
    def test_fresh_models_export_and_serve_their_outputs(self):
        images = np.random.default_rng(0).uniform(size=(2, 28, 28, 1))
        images = images.astype("float32")
        for name, model in (
            (
                "capsnet",
                models.capsnet(
                    (28, 28, 1),
                    10,
                    models.CapsNetConfig(
                        conv_filters=16,
                        primary_capsule_types=4,
                        decoder_units=(32,),
                    ),
                ),
            ),
            (
                "generative",
                models.generative_capsule_autoencoder(
                    image_shape=(28, 28, 1), seed=0
                ),
            ),
        ):
            path = os.path.join(self.get_temp_dir(), name)
            model.export(path, verbose=False)
            loaded = tf.saved_model.load(path)  # kept: it owns the weights
            self.assertAllClose(loaded.serve(images), model(images), atol=1e-5)


if __name__ == "__main__":
    tf.test.main()
