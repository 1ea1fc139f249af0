"""GenerativeCapsuleAutoencoder: training raises the bound; save and load;
free-form inference raises it further."""

import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import datasets, distributions, models, trainers
from tests.tracing import count_train_step_traces


def tiny_config(pose_posterior="delta", **options):
    """A small model's settings; `options` are more of its fields."""
    return models.GenerativeCapsuleConfig(
        num_top_capsules=3,
        num_template_capsules=4,
        template_size=6,
        pose_posterior=pose_posterior,
        **options,
    )


def tiny_autoencoder(pose_posterior="delta", **options):
    """A small model; `options` are more of its `GenerativeCapsuleConfig`."""
    return models.generative_capsule_autoencoder(
        (16, 16, 1), tiny_config(pose_posterior, **options), seed=0
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


def test_save_and_load_keep_encoder_and_decoder():
    model = tiny_autoencoder("gaussian")
    images = shapes(4)
    path = os.path.join(tempfile.mkdtemp(), "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert restored.config.pose_posterior == "gaussian"
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


@pytest.mark.parametrize(
    "optimizer, learning_rate", [("adam", 0.05), ("gradient_ascent", 1e-4)]
)
def test_free_form_inference_raises_the_bound(optimizer, learning_rate):
    model = tiny_autoencoder()
    images = shapes(8)
    latents, history = trainers.free_form_inference(
        model,
        images,
        num_steps=40,
        learning_rate=learning_rate,
        optimizer=optimizer,
    )
    assert len(history) == 40
    assert np.all(np.isfinite(history))
    assert np.mean(history[-5:]) > np.mean(history[:5])
    assert latents["top_poses"].shape == (8, 3, 6)


@pytest.mark.parametrize("optimizer", ["adam", "gradient_ascent"])
def test_free_form_inference_object_reuses_its_step_and_starts_afresh(
    optimizer,
):
    model = tiny_autoencoder(top_pose_refinement_steps=1)
    images, others = shapes(8), shapes(16)[8:]
    settings = {"num_steps": 4, "optimizer": optimizer, "jit_compile": False}
    infer = trainers.FreeFormInference(model, **settings)
    # Each call as a fresh `free_form_inference` call: the parameters
    # start at the encoders' and the optimizer's state (step count,
    # moments) is reset, on the same images and on others.
    for batch in (images, others, images):
        latents, history = infer(batch)
        want_latents, want_history = trainers.free_form_inference(
            model, batch, **settings
        )
        np.testing.assert_allclose(history, want_history, rtol=1e-6)
        for key, value in want_latents.items():
            np.testing.assert_allclose(
                latents[key], value, rtol=1e-5, atol=1e-6, err_msg=key
            )
    assert history[-1] != history[0]  # The steps moved the parameters.
    # One step function per batch shape, traced once for all its calls.
    infer(shapes(4))
    programs = infer._programs
    assert sorted(programs) == [(4, 16, 16, 1), (8, 16, 16, 1)]
    assert programs[(8, 16, 16, 1)].step.experimental_get_tracing_count() == 1


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"top_pose_refinement_steps": 2},
        {"top_presence_refinement_steps": 1},
    ],
    ids=["encoder", "computed_poses", "computed_presences"],
)
@pytest.mark.parametrize("recompute_top_layer", [True, False])
def test_free_form_inference_starts_where_the_encoders_end(
    options, recompute_top_layer
):
    # With a zero learning rate nothing moves, so the latents must be
    # `encode`'s, computed top poses and presences included.
    model = tiny_autoencoder(**options)
    images = shapes(8)
    latents, _ = trainers.free_form_inference(
        model,
        images,
        num_steps=2,
        learning_rate=0.0,
        recompute_top_layer=recompute_top_layer,
    )
    encoded = model.encode(images)
    for key, value in encoded.items():
        np.testing.assert_allclose(latents[key], value, atol=1e-5, err_msg=key)
    raw = model.posterior_from_parameters(
        model.top_encoder(
            model.template_capsules(model.template_posterior(images).mode())
        )
    )
    for name, key, value in (
        ("top_pose_refinement_steps", "top_poses", raw.pose_means),
        (
            "top_presence_refinement_steps",
            "top_presence_logits",
            raw.presence_logits,
        ),
    ):
        difference = np.abs(np.asarray(value) - encoded[key]).max()
        assert (difference > 1e-3) == (name in options), (name, difference)


def autoencoder_with_linear_top_encoder(kernel_scale):
    """A tiny model whose top encoder is one linear map of the flattened
    template capsules, its kernel scaled by `kernel_scale` (0: the top
    layer ignores its input; the bias alone sets its posterior). Seeded:
    the kernel draws do not depend on the tests run before."""
    keras.utils.set_random_seed(0)
    base = tiny_autoencoder()
    capsules = keras.Input((4, 7))
    dense = keras.layers.Dense(
        3 * 7,
        kernel_initializer=keras.initializers.RandomNormal(stddev=kernel_scale),
        bias_initializer=keras.initializers.RandomNormal(stddev=1.0),
    )
    parameters = keras.layers.Reshape((3, 7))(
        dense(keras.layers.Flatten()(capsules))
    )
    model = models.GenerativeCapsuleAutoencoder(
        base.decoder,
        base.template_encoder,
        keras.Model(capsules, parameters),
        seed=0,
    )
    model.build((None, 16, 16, 1))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    return model


def test_top_information_is_zero_for_a_top_layer_that_ignores_its_input():
    ignoring = autoencoder_with_linear_top_encoder(0.0)
    using = autoencoder_with_linear_top_encoder(1.0)
    images = shapes(64)
    ignored = ignoring.evaluate(
        images, batch_size=32, verbose=0, return_dict=True
    )
    used = using.evaluate(images, batch_size=32, verbose=0, return_dict=True)
    assert abs(ignored["top_information"]) < 1e-4, ignored
    assert abs(ignored["top_explained"]) < 1e-4, ignored
    assert ignored["top_presence_spread"] < 1e-6, ignored
    # The constant poses cost something (their bias is not 0) but carry
    # nothing: the measure does not count them.
    assert ignored["top_pose_magnitude"] > 0.1, ignored
    assert used["top_information"] > 1.0, used
    assert used["top_presence_information"] > 0.05, used
    assert used["top_presence_spread"] > 0.05, used


def test_training_raises_the_bound_tracing_its_step_once():
    keras.utils.set_random_seed(0)
    model = tiny_autoencoder()
    traces = count_train_step_traces(model)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    images = shapes()
    history = model.fit(
        images,
        batch_size=16,
        epochs=6,
        validation_data=(images[:16],),
        verbose=0,
    ).history
    assert history["elbo"][-1] > history["elbo"][0] + 50, history["elbo"]
    assert len(traces) == 1
    assert int(model.optimizer.iterations.numpy()) == 24
    # The top layer's measures, logged for training and validation.
    for name in (
        "top_information",
        "top_presence_information",
        "top_pose_magnitude",
        "top_presence_spread",
        "top_explained",
    ):
        assert len(history[name]) == 6
        assert len(history["val_" + name]) == 6
        assert np.all(np.isfinite(history[name]))


def test_unknown_pose_posterior_raises():
    with pytest.raises(ValueError, match="pose_posterior"):
        tiny_autoencoder("laplace")


@pytest.mark.parametrize(
    "options",
    [{"top_pose_refinement_steps": 2}, {"top_presence_refinement_steps": 1}],
)
def test_inference_settings_train_and_round_trip(options):
    keras.utils.set_random_seed(0)
    model = tiny_autoencoder(**options)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(shapes(32), batch_size=16, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    restored = models.GenerativeCapsuleAutoencoder.from_config(
        model.get_config()
    )
    assert restored.config == model.config
    for name, value in options.items():
        assert getattr(restored.config, name) == value
        with pytest.raises(ValueError, match=name):
            tiny_config(**{name: -1})


def test_a_models_inference_changes_through_its_config_and_sizes_do_not():
    model = tiny_autoencoder()
    images = shapes(4)
    amortised = model.encode(images)["top_poses"]
    model.config = model.config.replace(top_pose_refinement_steps=2)
    assert model.config.top_pose_refinement_steps == 2
    assert model.get_config()["config"]["top_pose_refinement_steps"] == 2
    refined = model.encode(images)["top_poses"]
    assert np.abs(np.asarray(refined) - np.asarray(amortised)).max() > 1e-4
    with pytest.raises(ValueError, match="num_top_capsules=5, its decoder 3"):
        model.config = model.config.replace(num_top_capsules=5)
    # Built from parts without a config: the decoder's sizes.
    rebuilt = models.GenerativeCapsuleAutoencoder(
        model.decoder, model.template_encoder, model.top_encoder
    )
    assert rebuilt.config == tiny_config()


def test_presets_are_settings_of_the_guide():
    presets = models.GenerativeCapsuleConfig.PRESETS
    assert presets["paper"] == models.GenerativeCapsuleConfig()
    assert presets["computed_top_poses"].top_pose_refinement_steps == 3
    assert presets["single_parent"].top_posterior_family == "single_parent"
    assert (
        models.GenerativeCapsuleConfig.get("single_parent")
        is (presets["single_parent"])
    )
    with pytest.raises(ValueError, match="preset 'fast'"):
        models.GenerativeCapsuleConfig.get("fast")


def test_selection_information_against_numpy():
    rng = np.random.default_rng(0)
    posterior = rng.dirichlet(np.ones(4), size=(6, 5)).transpose(0, 2, 1)
    shares = posterior.mean(-1)  # (batch, parents)

    def entropy(p):
        return -(p * np.log(p)).sum(-1)

    expected = entropy(shares.mean(0)) - entropy(shares).mean()
    measured = models.selection_information(posterior)
    np.testing.assert_allclose(measured, expected, rtol=1e-5)
    # The same shares in every image: nothing about the image.
    same = np.repeat(posterior[:1], 6, axis=0)
    assert abs(float(models.selection_information(same))) < 1e-6
    # Each image explained by one parent, parents used equally: log 3.
    one_hot = np.zeros((3, 3, 5))
    for image in range(3):
        one_hot[image, image] = 1.0
    np.testing.assert_allclose(
        models.selection_information(one_hot),
        np.log(3),
        rtol=1e-5,
    )


def test_presence_information_is_the_layers_presence_part():
    model = tiny_autoencoder()
    posterior = model.template_posterior(shapes(8))
    np.testing.assert_allclose(
        models.presence_information(posterior),
        distributions.layer_information(
            posterior.presence_logits, posterior.pose_means
        )["presence_information"],
        rtol=1e-6,
    )


_TEMPLATE_LATENTS = {"template_presences", "template_poses"}
_TOP_LATENTS = {"top_presence_logits", "top_poses"}


def latent_changes(model, **options):
    """The largest change of each latent of 8 images from `encode` after 5
    Adam steps of free-form inference at rate 0.05 with `options`."""
    images = shapes(8)
    latents, _ = trainers.free_form_inference(
        model,
        images,
        num_steps=5,
        learning_rate=0.05,
        optimizer="adam",
        **options,
    )
    return {
        key: float(np.abs(np.asarray(latents[key]) - value).max())
        for key, value in model.encode(images).items()
    }


@pytest.mark.parametrize(
    "refined_parts, moved",
    [
        (("top",), _TOP_LATENTS),
        ("top", _TOP_LATENTS),
        (("template_presences",), {"template_presences"}),
        (("template_poses",), {"template_poses"}),
        (trainers.REFINED_PARTS, _TEMPLATE_LATENTS | _TOP_LATENTS),
    ],
    ids=["top", "top_by_name", "template_presences", "template_poses", "all"],
)
def test_free_form_inference_moves_only_the_refined_parts(refined_parts, moved):
    # Without computed steps the top latents are the top parameters, so
    # they stay `encode`'s unless refined.
    changes = latent_changes(tiny_autoencoder(), refined_parts=refined_parts)
    for key, change in changes.items():
        if key in moved:
            assert change > 1e-3, (key, change)
        else:
            assert change < 1e-6, (key, change)


@pytest.mark.parametrize("recompute_top_layer", [True, False])
def test_a_free_top_layer_is_not_recomputed_from_refined_templates(
    recompute_top_layer,
):
    # Only the template poses move: computed top poses and presences
    # follow them, free ones stay where the computed steps put them.
    model = tiny_autoencoder(
        top_pose_refinement_steps=2, top_presence_refinement_steps=1
    )
    changes = latent_changes(
        model,
        refined_parts=("template_poses",),
        recompute_top_layer=recompute_top_layer,
    )
    assert changes["template_poses"] > 1e-3
    for key in _TOP_LATENTS:
        assert (changes[key] > 1e-3) == recompute_top_layer, (key, changes)


def test_a_gradient_ascent_step_is_the_rate_times_each_images_gradient():
    # The paper's basic gradient descent, written out here: one step moves
    # every image's parameters by the rate times the gradient of its own
    # bound (so of the batch's sum), with the step's Monte Carlo draws.
    model = tiny_autoencoder()
    images = tf.constant(shapes(8))
    rate = 1e-4
    latents, _ = trainers.free_form_inference(
        model,
        images,
        num_steps=1,
        learning_rate=rate,
        jit_compile=False,
        optimizer="gradient_ascent",
    )
    template_parameters = tf.Variable(model.template_encoder(images))
    top_parameters = tf.Variable(
        model.top_encoder(
            model.template_capsules(model.template_posterior(images).mode())
        )
    )
    with tf.GradientTape() as tape:
        bound = tf.reduce_sum(
            distributions.capsule_elbo(
                model.decoder.generative_model(),
                images,
                model.posterior_from_parameters(template_parameters),
                lambda _: model.posterior_from_parameters(top_parameters),
                tf.constant([0, 0], tf.int32),
            )["elbo"]
        )
    template_gradient, top_gradient = tape.gradient(
        bound, [template_parameters, top_parameters]
    )
    templates = template_parameters + rate * template_gradient
    top = top_parameters + rate * top_gradient
    expected = {
        "template_presences": tf.sigmoid(templates[..., 0]),
        "template_poses": templates[..., 1:7],
        "top_presence_logits": top[..., 0],
        "top_poses": top[..., 1:7],
    }
    for key, value in expected.items():
        moved = np.abs(np.asarray(value) - model.encode(images)[key]).max()
        assert moved > 1e-6, key
        np.testing.assert_allclose(
            latents[key], value, rtol=1e-5, atol=1e-6, err_msg=key
        )


@pytest.mark.parametrize("optimizer", trainers.FREE_FORM_OPTIMIZERS)
def test_free_form_inference_takes_the_optimizers_own_default_rate(optimizer):
    model = tiny_autoencoder()
    images = shapes(4)
    rate = trainers.FREE_FORM_LEARNING_RATES[optimizer]
    latents = {}
    for learning_rate in (None, rate, 2 * rate):
        latents[learning_rate], _ = trainers.free_form_inference(
            model,
            images,
            num_steps=2,
            learning_rate=learning_rate,
            jit_compile=False,
            optimizer=optimizer,
        )
    default, given, doubled = latents.values()
    for key in default:
        np.testing.assert_array_equal(default[key], given[key], err_msg=key)
    assert not np.allclose(default["template_poses"], doubled["template_poses"])


def test_free_form_inference_rejects_an_unknown_optimizer():
    with pytest.raises(ValueError, match="optimizer='sgd'"):
        trainers.free_form_inference(
            tiny_autoencoder(), shapes(2), num_steps=1, optimizer="sgd"
        )
    with pytest.raises(ValueError, match="optimizer='sgd'"):
        trainers.FreeFormInference(tiny_autoencoder(), optimizer="sgd")


@pytest.mark.parametrize("refined_parts", [(), ("top", "templates")])
def test_free_form_inference_rejects_unknown_parts(refined_parts):
    with pytest.raises(ValueError, match="refined_parts"):
        trainers.free_form_inference(
            tiny_autoencoder(),
            shapes(2),
            num_steps=1,
            refined_parts=refined_parts,
        )
    with pytest.raises(ValueError, match="refined_parts"):
        trainers.FreeFormInference(
            tiny_autoencoder(), refined_parts=refined_parts
        )
