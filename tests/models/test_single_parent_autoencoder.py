"""GenerativeCapsuleAutoencoder with one top capsule present
(`top_posterior_family="single_parent"`): its bound is
`distributions.single_parent_elbo` at the exact posterior, training
balances the batch's parents, and the model trains under XLA, saves,
reloads and exports."""

import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import distributions, trainers
from tests.models.test_generative_capsule_autoencoder import (
    shapes,
    tiny_autoencoder,
    tiny_config,
)


def single_parent_autoencoder(**options):
    return tiny_autoencoder(
        top_posterior_family="single_parent",
        top_pose_refinement_steps=2,
        **options,
    )


def test_the_bound_is_the_single_parent_bound_at_the_exact_posterior():
    model = single_parent_autoencoder()
    images = tf.constant(shapes(8), tf.float32)
    seed = tf.constant([1, 2])
    terms = model.elbo_terms(images, seed=seed)
    generative = model.decoder.generative_model()
    templates = terms["templates"]
    scores, _ = distributions.single_parent_choices(
        generative,
        model.posterior_from_parameters(
            model.top_encoder(model.template_capsules(templates))
        ).pose_means,
        templates,
        2,
    )
    np.testing.assert_allclose(
        terms["top_posterior"].log_probabilities,
        tf.nn.log_softmax(scores),
        rtol=1e-5,
        atol=1e-5,
    )
    expected = distributions.single_parent_elbo(
        generative,
        images,
        model.template_posterior(images),
        model.top_posterior,
        seed,
    )
    np.testing.assert_allclose(terms["elbo"], expected["elbo"], rtol=1e-6)
    # Every image has one parent present: the marginals sum to 1.
    latents = model.encode(images)
    np.testing.assert_allclose(
        tf.reduce_sum(tf.sigmoid(latents["top_presence_logits"]), -1),
        1.0,
        rtol=1e-5,
    )
    assert latents["top_poses"].shape == (8, 3, 6)


def test_training_balances_the_batchs_parents_and_evaluation_does_not():
    model = single_parent_autoencoder(single_parent_balance_temperature=2.0)
    templates = model.template_posterior(shapes(30)).mode()
    shares = {
        training: np.exp(
            model.top_posterior(templates, training).log_probabilities
        ).sum(0)
        for training in (False, True)
    }
    # Untrained, one parent explains most shapes best; balanced, each
    # parent takes about a third of the 30.
    assert shares[False].max() > 15.0, shares
    np.testing.assert_allclose(shares[True], 10.0, rtol=0.05)


def test_training_raises_the_bound_under_xla_and_the_model_round_trips():
    keras.utils.set_random_seed(0)
    model = single_parent_autoencoder(single_parent_balance_temperature=1.0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=True)
    history = model.fit(shapes(64), batch_size=16, epochs=4, verbose=0)
    elbo = history.history["elbo"]
    assert np.all(np.isfinite(history.history["loss"]))
    assert elbo[-1] > elbo[0] + 20, elbo
    assert history.history["top_presence_information"][-1] > 0.1
    images = shapes(4)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        restored = keras.models.load_model(path)
        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint(
            "serve",
            model.encode,
            input_signature=[tf.TensorSpec((None, 16, 16, 1), tf.float32)],
        )
        archive.write_out(os.path.join(directory, "export"), verbose=False)
        exported = tf.saved_model.load(os.path.join(directory, "export"))
        served = exported.serve(tf.constant(images, tf.float32))
    assert restored.config.top_posterior_family == "single_parent"
    assert restored.config.single_parent_balance_temperature == 1.0
    for key, value in model.encode(images).items():
        for other in (restored.encode(images), served):
            np.testing.assert_allclose(other[key], value, rtol=1e-5, atol=1e-5)


def test_free_form_inference_computes_the_top_layer_from_its_templates():
    model = single_parent_autoencoder()
    images = tf.constant(shapes(8), tf.float32)
    latents, history = trainers.free_form_inference(
        model, images, num_steps=3, learning_rate=0.0, jit_compile=False
    )
    assert np.all(np.isfinite(history))
    # Nothing moved: the latents are the amortised ones.
    for key, value in model.encode(images).items():
        np.testing.assert_allclose(latents[key], value, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "options, name",
    [
        ({"top_posterior_family": "mixture"}, "top_posterior_family"),
        (
            {"single_parent_balance_temperature": 1.0},
            "single_parent_balance_temperature",
        ),
        (
            {
                "top_posterior_family": "single_parent",
                "single_parent_balance_temperature": -1.0,
            },
            "single_parent_balance_temperature",
        ),
        (
            {
                "top_posterior_family": "single_parent",
                "pose_posterior": "gaussian",
            },
            "pose_posterior",
        ),
        (
            {
                "top_posterior_family": "single_parent",
                "top_presence_refinement_steps": 1,
            },
            "top_presence_refinement_steps",
        ),
    ],
)
def test_bad_combinations_are_refused_by_name(options, name):
    with pytest.raises(ValueError, match=name):
        tiny_config(**options)
