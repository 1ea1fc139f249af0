"""The VAE baseline: its bound falls in training; it saves and loads;
`fit` traces its step once."""

import os
import tempfile

import keras
import numpy as np

from keras_capsules import datasets, models
from tests.tracing import count_train_step_traces


def test_trains_saves_and_encodes():
    images = datasets.load_procedural_shapes(
        "train", num_examples=256, image_size=16
    )["image"]
    keras.utils.set_random_seed(0)
    vae = models.VariationalAutoencoder((16, 16, 1), latent_dim=4, seed=0)
    vae.build()
    vae.compile(optimizer=keras.optimizers.Adam(3e-3))
    loss = vae.fit(images, batch_size=64, epochs=4, verbose=0).history["loss"]
    assert loss[-1] < loss[0]
    mean, std = vae.encode(images[:5])
    assert mean.shape == (5, 4) and np.all(np.asarray(std) > 0)
    path = os.path.join(tempfile.mkdtemp(), "vae.keras")
    vae.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(restored(images[:5]), vae(images[:5]), atol=1e-6)


def test_fit_traces_the_training_step_once_without_a_build_first():
    vae = models.VariationalAutoencoder((8, 8, 1), latent_dim=2, seed=0)
    traces = count_train_step_traces(vae)
    vae.compile(optimizer=keras.optimizers.Adam(1e-3))
    images = np.random.default_rng(0).uniform(size=(32, 8, 8, 1))
    vae.fit(images.astype("float32"), batch_size=16, epochs=2, verbose=0)
    assert len(traces) == 1
    assert int(vae.optimizer.iterations.numpy()) == 4
