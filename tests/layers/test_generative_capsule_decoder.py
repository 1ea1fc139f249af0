"""GenerativeCapsuleDecoder: parameters, rendering, the model it builds."""

import numpy as np
import pytest

from keras_capsules import distributions, layers


def test_paper_configuration_has_under_30k_parameters():
    decoder = layers.GenerativeCapsuleDecoder()
    decoder.build()
    assert decoder.count_params() == 6944  # paper: fewer than 30,000


def test_call_renders_its_templates():
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2,
        num_template_capsules=3,
        template_size=4,
        image_shape=(9, 8, 1),
    )
    rng = np.random.default_rng(0)
    presences = rng.uniform(size=(2, 3)).astype("float32")
    poses = (rng.normal(size=(2, 3, 6)) * 0.2).astype("float32")
    image = decoder([presences, poses])
    templates, alphas = decoder.templates()
    expected = distributions.render_templates(
        templates, alphas, presences, poses, (9, 8)
    )
    np.testing.assert_allclose(image, expected, atol=1e-6)


def test_generative_model_samples_and_scores():
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2,
        num_template_capsules=3,
        template_size=4,
        image_shape=(8, 8, 1),
    )
    decoder.build()
    for relaxed in (False, True):
        model = decoder.generative_model(relaxed=relaxed)
        sample = model.sample(4, seed=(1, 2))
        assert sample["image"].shape == (4, 8, 8, 1)
        log_joint = model.log_joint(
            sample["image"], sample["top"], sample["templates"]
        )
        assert log_joint.shape == (4,)
        assert np.all(np.isfinite(log_joint))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"pixel_scale": 0.0}, "pixel_scale"),
        ({"image_shape": (28, 28)}, r"\(H, W, C\)"),
        ({"num_template_capsules": 0}, "num_template_capsules"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.GenerativeCapsuleDecoder(**kwargs)


def test_pose_scales_start_at_the_initial_scale():
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2, num_template_capsules=3, template_size=4
    )
    decoder.build()
    np.testing.assert_allclose(decoder.pose_scales(), 0.15, rtol=1e-5)
    decoder = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2,
        num_template_capsules=3,
        template_size=4,
        min_pose_scale=0.2,
        initial_pose_scale=0.5,
    )
    decoder.build()
    np.testing.assert_allclose(decoder.pose_scales(), 0.5, rtol=1e-5)
    assert decoder.get_config()["initial_pose_scale"] == 0.5
    with pytest.raises(ValueError, match="initial_pose_scale"):
        layers.GenerativeCapsuleDecoder(
            min_pose_scale=0.2, initial_pose_scale=0.2
        )


def test_a_former_fixed_top_presence_probability_is_kept_and_not_trained():
    # Earlier releases took `top_presence_probability` and `temperature`
    # as arguments; their configs load to the same prior.
    former = {
        **layers.GenerativeCapsuleDecoder(
            num_top_capsules=2, num_template_capsules=3, template_size=4
        ).get_config(),
        "temperature": 0.5,
        "top_presence_probability": 0.1,
    }
    decoder = layers.GenerativeCapsuleDecoder.from_config(former)
    decoder.build()
    np.testing.assert_allclose(
        decoder.top_presence_logits, np.log(0.1 / 0.9) * np.ones(2), rtol=1e-6
    )
    assert not any(
        weight is decoder.top_presence_logits
        for weight in decoder.trainable_weights
    )
    prior = decoder.generative_model(relaxed=False).top_prior()
    present = {"presence": np.array([1.0, 0.0]), "pose": np.zeros((2, 6))}
    expected = np.log(0.1) + np.log(0.9) - 6 * np.log(2 * np.pi)
    np.testing.assert_allclose(prior.log_prob(present), expected, rtol=1e-5)
    assert decoder.temperature == 0.5
    config = decoder.get_config()
    assert config["top_presence_probability"] == 0.1
    assert config["temperature"] == 0.5
    learned = layers.GenerativeCapsuleDecoder(
        num_top_capsules=2, num_template_capsules=3, template_size=4
    )
    learned.build()
    assert any(
        weight is learned.top_presence_logits
        for weight in learned.trainable_weights
    )
    assert "top_presence_probability" not in learned.get_config()
