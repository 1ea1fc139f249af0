"""Template warping, alpha compositing and the pixel likelihood (eq. 7)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules.distributions import (
    render_templates,
    template_image_likelihood,
    warp_templates,
)
from tests.distributions import generative_reference as reference


def random_scene(rng, batch=2, n=3, template_size=(4, 3), channels=1):
    templates = rng.uniform(size=(n, *template_size, channels))
    alphas = rng.uniform(size=(n, *template_size, 1))
    presences = rng.uniform(size=(batch, n))
    poses = rng.normal(size=(batch, n, 6)) * 0.3
    return templates, alphas, presences, poses


@pytest.mark.parametrize("channels", [1, 3])
def test_render_matches_sequential_over(channels):
    rng = np.random.default_rng(0)
    templates, alphas, presences, poses = random_scene(rng, channels=channels)
    presences[0, 1] = 0.0  # an absent capsule
    presences[1, 2] = 1.0  # a saturated one
    alphas[0, 0, 0] = 1.0
    image_size = (9, 7)
    rendered = render_templates(
        templates, alphas, presences, poses, image_size
    ).numpy()
    for b in range(2):
        expected = reference.render(
            templates, alphas, presences[b], poses[b], image_size
        )
        np.testing.assert_allclose(rendered[b], expected, atol=1e-6)


def test_identity_pose_places_the_template_at_the_centre():
    template = np.arange(16, dtype=float).reshape(1, 4, 4, 1)
    warped = warp_templates(template, np.zeros((1, 1, 6)), (8, 8)).numpy()
    expected = np.zeros((8, 8, 1))
    expected[2:6, 2:6] = template[0]
    np.testing.assert_allclose(warped[0, 0], expected, atol=1e-12)


def test_translation_moves_the_template_in_image_units():
    template = np.ones((1, 2, 2, 1))
    pose = np.zeros((1, 1, 6))
    pose[..., 2] = 0.5  # half the image's half-width: 2 pixels of 8
    warped = warp_templates(template, pose, (8, 8)).numpy()[0, 0, ..., 0]
    assert warped[3:5, 5:7].sum() == pytest.approx(4.0)
    assert warped.sum() == pytest.approx(4.0)


def test_likelihood_is_an_independent_normal_on_the_render():
    rng = np.random.default_rng(1)
    templates, alphas, presences, poses = random_scene(rng)
    likelihood = template_image_likelihood(
        templates, alphas, presences, poses, (6, 5), pixel_scale=0.2
    )
    assert likelihood.batch_shape == (2,)
    assert likelihood.event_shape == (6, 5, 1)
    images = rng.uniform(size=(2, 6, 5, 1))
    mean = render_templates(templates, alphas, presences, poses, (6, 5))
    expected = np.log(reference.normal_pdf(images, mean, 0.2)).sum((1, 2, 3))
    np.testing.assert_allclose(likelihood.log_prob(images), expected)
    sample = likelihood.sample(seed=(1, 2))
    assert sample.shape == (2, 6, 5, 1)


def test_gradients_are_finite_at_degenerate_poses():
    """A pose whose linear part is singular, saturated alphas, t = 0."""
    rng = np.random.default_rng(2)
    templates, alphas, presences, poses = random_scene(rng)
    alphas[:] = 1.0
    poses[0, 0, [0, 4]] = -1.0  # I + A has a zero linear part
    presences[1] = 0.0
    poses = tf.Variable(poses)
    presences = tf.Variable(presences)
    with tf.GradientTape() as tape:
        image = render_templates(templates, alphas, presences, poses, (6, 6))
        total = tf.reduce_sum(image**2)
    gradients = tape.gradient(total, [poses, presences])
    assert np.all(np.isfinite(image.numpy()))
    for gradient in gradients:
        assert np.all(np.isfinite(gradient.numpy()))


def test_warp_matches_bilinear_sampling_at_edges_and_far_away():
    rng = np.random.default_rng(3)
    templates = rng.uniform(size=(5, 4, 3, 2))
    poses = rng.normal(size=(1, 5, 6)) * 0.05
    poses[0, 0, 2] = 0.9  # half off the right edge
    poses[0, 1, 5] = -1.1  # cut by the top edge
    poses[0, 2, 2] = 1e6  # a million image widths away
    poses[0, 3, [0, 4]] = 49.0  # 50 times larger: taps beyond both borders
    poses[0, 4, [0, 4]] = -0.9  # a tenth of its size
    image_size = (9, 7)
    warped = warp_templates(templates, poses, image_size).numpy()
    for k in range(5):
        expected = reference.warp(templates[k], poses[0, k], image_size)
        np.testing.assert_allclose(warped[0, k], expected, atol=1e-9)
    assert not warped[0, 2].any()


def test_warp_gradients_match_central_differences():
    rng = np.random.default_rng(4)
    templates = tf.Variable(rng.uniform(size=(2, 4, 3, 1)))
    poses = tf.Variable(rng.normal(size=(2, 2, 6)) * 0.3)
    weights = rng.normal(size=(2, 2, 6, 5, 1))

    def objective():
        return tf.reduce_sum(weights * warp_templates(templates, poses, (6, 5)))

    with tf.GradientTape() as tape:
        value = objective()
    gradients = tape.gradient(value, [poses, templates])
    for variable, gradient in zip([poses, templates], gradients):
        numeric = np.zeros(variable.shape)
        for index in np.ndindex(*variable.shape):
            step = np.zeros(variable.shape)
            step[index] = 1e-6
            variable.assign_add(step)
            above = objective().numpy()
            variable.assign_sub(2 * step)
            below = objective().numpy()
            variable.assign_add(step)
            numeric[index] = (above - below) / 2e-6
        np.testing.assert_allclose(gradient.numpy(), numeric, atol=1e-6)


def test_warp_under_xla_matches_eager():
    rng = np.random.default_rng(5)
    templates = tf.constant(rng.uniform(size=(3, 12, 12, 2)), tf.float32)
    poses = tf.constant(rng.normal(size=(4, 3, 6)) * 0.3, tf.float32)

    def warp_and_gradients(poses, templates):
        with tf.GradientTape() as tape:
            tape.watch([poses, templates])
            warped = warp_templates(templates, poses, (40, 40))
            total = tf.reduce_sum(tf.square(warped))
        return [warped, *tape.gradient(total, [poses, templates])]

    eager = warp_and_gradients(poses, templates)
    compiled = tf.function(warp_and_gradients, jit_compile=True)(
        poses, templates
    )
    # Two float32 evaluations that sum in different orders. Each differs
    # from the float64 result by up to ~1e-5 of the array's largest entry
    # (measured on an AVX2 CPU: the pose gradient, entries up to 279, by
    # 2.2e-3 in eager mode and 2.1e-3 under XLA), so the tolerance scales
    # with that entry; a fixed 1e-4 was below float32's own error there.
    for got, want in zip(compiled, eager):
        scale = float(np.max(np.abs(want)))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)
