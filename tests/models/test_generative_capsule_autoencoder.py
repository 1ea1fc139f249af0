"""GenerativeCapsuleAutoencoder: training raises the bound; save and load;
free-form inference raises it further."""

import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import datasets, models, trainers


def tiny_autoencoder(pose_posterior="delta"):
    return models.generative_capsule_autoencoder(
        image_shape=(16, 16, 1),
        num_top_capsules=3,
        num_template_capsules=4,
        template_size=6,
        pose_posterior=pose_posterior,
        seed=0,
    )


def shapes(count=64):
    data = datasets.load_procedural_shapes(
        "train", num_examples=count, image_size=16, seed=0
    )
    return data["image"]


@pytest.mark.parametrize("pose_posterior", ["delta", "gaussian"])
def test_gradients_of_the_bound_are_finite(pose_posterior):
    model = tiny_autoencoder(pose_posterior)
    images = shapes(8)
    with tf.GradientTape() as tape:
        terms = model.elbo_terms(images, seed=tf.constant([1, 2]))
        loss = -tf.reduce_mean(terms["elbo"])
    gradients = tape.gradient(loss, model.trainable_variables)
    assert len(gradients) == len(model.trainable_variables)
    for gradient in gradients:
        assert gradient is not None
        assert np.all(np.isfinite(tf.convert_to_tensor(gradient)))


def test_training_raises_the_bound():
    keras.utils.set_random_seed(0)
    model = tiny_autoencoder()
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(shapes(), batch_size=16, epochs=6, verbose=0)
    elbo = history.history["elbo"]
    assert elbo[-1] > elbo[0] + 50, elbo


def test_save_and_load_keep_encoder_and_decoder():
    model = tiny_autoencoder("gaussian")
    images = shapes(4)
    path = os.path.join(tempfile.mkdtemp(), "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert restored.pose_posterior == "gaussian"
    np.testing.assert_allclose(restored(images), model(images), atol=1e-6)
    for key, value in model.encode(images).items():
        np.testing.assert_allclose(
            restored.encode(images)[key], value, atol=1e-5
        )
    seed = tf.constant([3, 4])
    np.testing.assert_allclose(
        restored.elbo_terms(images, seed)["elbo"],
        model.elbo_terms(images, seed)["elbo"],
        rtol=1e-5,
    )


def test_free_form_inference_raises_the_bound():
    model = tiny_autoencoder()
    images = shapes(8)
    latents, history = trainers.free_form_inference(
        model, images, num_steps=40, learning_rate=0.05
    )
    assert len(history) == 40
    assert np.mean(history[-5:]) > np.mean(history[:5])
    assert latents["top_poses"].shape == (8, 3, 6)


def test_unknown_pose_posterior_raises():
    with pytest.raises(ValueError, match="pose_posterior"):
        tiny_autoencoder("laplace")
