"""CapsuleConditional against enumeration over every selection."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules.distributions import CapsuleConditional
from tests.distributions import generative_reference as reference


def random_params(rng, n_p, n_c, pose_dim):
    return {
        "pose_predictions": rng.normal(size=(n_p, n_c, pose_dim)),
        "affinities": rng.uniform(0.2, 2.0, size=(n_p, n_c)),
        "presence_logits": rng.normal(size=(n_p + 1, n_c)) * 2,
        "pose_scales": rng.uniform(0.3, 1.0, size=(n_p, n_c)),
        "clutter_affinity": 0.1,
        "clutter_pose_scale": 2.0,
        "off_pose_scale": 1.5,
    }


def make_conditional(params, parent_presences, temperature=None):
    return CapsuleConditional(
        parent_presences=tf.convert_to_tensor(parent_presences, tf.float64),
        pose_predictions=tf.convert_to_tensor(params["pose_predictions"]),
        log_affinities=np.log(params["affinities"]),
        presence_logits=params["presence_logits"],
        pose_scales=params["pose_scales"],
        clutter_log_affinity=np.log(params["clutter_affinity"]),
        clutter_pose_scale=params["clutter_pose_scale"],
        off_pose_scale=params["off_pose_scale"],
        temperature=temperature,
    )


@pytest.mark.parametrize(
    "parent_presences",
    [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.3, 0.9, 0.05]],
    ids=["binary_parents", "all_parents_off", "relaxed_parents"],
)
@pytest.mark.parametrize("temperature", [None, 0.7])
def test_log_prob_equals_enumeration_over_selections(
    parent_presences, temperature
):
    rng = np.random.default_rng(0)
    n_p, n_c, pose_dim = 3, 3, 2
    params = random_params(rng, n_p, n_c, pose_dim)
    conditional = make_conditional(params, parent_presences, temperature)
    for _ in range(4):
        if temperature is None:
            presences = rng.integers(0, 2, size=n_c).astype(float)
        else:
            presences = rng.normal(size=n_c) * 3
        poses = rng.normal(size=(n_c, pose_dim))
        expected = reference.brute_force_log_prob(
            np.array(parent_presences), presences, poses, params, temperature
        )
        value = {conditional.presence_key: presences, "pose": poses}
        np.testing.assert_allclose(
            conditional.log_prob(value).numpy(), expected, rtol=1e-10
        )


def test_selection_posterior_matches_bayes_rule():
    rng = np.random.default_rng(1)
    params = random_params(rng, 2, 3, 2)
    parents = np.array([1.0, 0.4])
    conditional = make_conditional(params, parents)
    presences = np.array([1.0, 0.0, 1.0])
    poses = rng.normal(size=(3, 2))
    posterior = conditional.selection_posterior(
        {"presence": presences, "pose": poses}
    ).numpy()
    pi = reference.selection_probabilities(
        parents, params["affinities"], params["clutter_affinity"]
    )
    for j in range(3):
        joint = np.array(
            [
                pi[i, j]
                * reference.component_density(
                    presences[j], poses[j], i, j, params
                )
                for i in range(3)
            ]
        )
        np.testing.assert_allclose(posterior[:, j], joint / joint.sum())


@pytest.mark.parametrize("temperature", [None, 0.7])
def test_on_pose_posterior_matches_bayes_rule(temperature):
    # p(s_j = i, pose from eq. 5 | t, A): the on-pose share of each
    # component's density, over the density summed over components.
    rng = np.random.default_rng(5)
    params = random_params(rng, 2, 3, 2)
    parents = np.array([1.0, 0.4])
    conditional = make_conditional(params, parents, temperature)
    if temperature is None:
        presences = np.array([1.0, 0.0, 1.0])
    else:
        presences = np.array([2.5, -1.0, 0.3])
    poses = rng.normal(size=(3, 2))
    posterior = conditional.on_pose_posterior(
        {conditional.presence_key: presences, "pose": poses}
    ).numpy()
    pi = reference.selection_probabilities(
        parents, params["affinities"], params["clutter_affinity"]
    )
    for j in range(3):
        total, on = 0.0, np.zeros(3)
        for i in range(3):
            total += pi[i, j] * reference.component_density(
                presences[j], poses[j], i, j, params, temperature
            )
            mean = (
                np.zeros(2) if i == 0 else params["pose_predictions"][i - 1, j]
            )
            scale = (
                params["clutter_pose_scale"]
                if i == 0
                else params["pose_scales"][i - 1, j]
            )
            density = np.prod(reference.normal_pdf(poses[j], mean, scale))
            gamma_logit = params["presence_logits"][i, j]
            if temperature is None:
                on[i] = presences[j] * reference.sigmoid(gamma_logit) * density
            else:
                on[i] = (
                    reference.logistic_pdf(
                        presences[j], gamma_logit / temperature, 1 / temperature
                    )
                    * reference.sigmoid(presences[j])
                    * density
                )
            on[i] *= pi[i, j]
        np.testing.assert_allclose(posterior[:, j], on / total, rtol=1e-10)


def test_shapes_broadcast_batch_axes():
    rng = np.random.default_rng(2)
    params = random_params(rng, 2, 4, 6)
    params["pose_predictions"] = rng.normal(size=(5, 2, 4, 6))
    conditional = make_conditional(
        params, rng.uniform(size=(5, 2)), temperature=1.0
    )
    assert conditional.batch_shape == (5,)
    assert conditional.event_shape == {
        "presence_logit": (4,),
        "pose": (4, 6),
    }
    samples = conditional.sample(7, seed=(1, 2))
    assert samples["presence_logit"].shape == (7, 5, 4)
    assert samples["pose"].shape == (7, 5, 4, 6)
    assert conditional.log_prob(samples).shape == (7, 5)


def grid_density(conditional, presences, grid):
    """`p(t, a)` of one child with a 1-D pose on a grid of poses."""
    value = {
        conditional.presence_key: tf.constant(presences)[:, None],
        "pose": tf.constant(grid)[:, None, None],
    }
    return np.exp(conditional.log_prob(value).numpy())


def test_binary_samples_agree_with_log_prob():
    """Frequencies, conditional mean and the pose CDF of 40,000 draws
    against the density integrated on a grid (a Kolmogorov-Smirnov bound
    at the 99.99% level)."""
    rng = np.random.default_rng(3)
    params = random_params(rng, 2, 1, 1)
    conditional = make_conditional(params, [1.0, 0.7])
    grid = np.linspace(-12, 12, 24001)
    step = grid[1] - grid[0]
    on = grid_density(conditional, np.ones_like(grid), grid)
    off = grid_density(conditional, np.zeros_like(grid), grid)
    assert abs((on.sum() + off.sum()) * step - 1.0) < 1e-6  # normalised

    draws = 40_000
    samples = conditional.sample(draws, seed=(4, 5))
    present = samples["presence"].numpy()[:, 0]
    pose = samples["pose"].numpy()[:, 0, 0]
    p_on = on.sum() * step
    assert abs(present.mean() - p_on) < 4 * np.sqrt(p_on * (1 - p_on) / draws)
    mean_on = (grid * on).sum() * step / p_on
    std_on = np.sqrt((grid**2 * on).sum() * step / p_on - mean_on**2)
    sample_mean = pose[present == 1].mean()
    assert abs(sample_mean - mean_on) < 4 * std_on / np.sqrt(present.sum())
    cdf = np.cumsum(on + off) * step
    empirical = np.searchsorted(np.sort(pose), grid) / draws
    assert np.max(np.abs(empirical - cdf)) < 2.0 / np.sqrt(draws)


def test_relaxed_samples_agree_with_log_prob():
    rng = np.random.default_rng(6)
    params = random_params(rng, 2, 1, 1)
    conditional = make_conditional(params, [0.8, 0.2], temperature=0.8)
    logits = np.linspace(-30, 30, 1201)
    poses = np.linspace(-12, 12, 1201)
    logit_grid, pose_grid = np.meshgrid(logits, poses, indexing="ij")
    density = grid_density(
        conditional, logit_grid.ravel(), pose_grid.ravel()
    ).reshape(logit_grid.shape)
    cell = (logits[1] - logits[0]) * (poses[1] - poses[0])
    assert abs(density.sum() * cell - 1.0) < 1e-4  # normalised

    draws = 40_000
    samples = conditional.sample(draws, seed=(7, 8))
    logit = samples["presence_logit"].numpy()[:, 0]
    pose = samples["pose"].numpy()[:, 0, 0]
    for threshold in (-1.0, 0.0, 2.0):
        p = density[logits > threshold].sum() * cell
        assert abs((logit > threshold).mean() - p) < 4 * np.sqrt(
            p * (1 - p) / draws
        )
    pose_cdf = np.cumsum(density.sum(0)) * cell
    empirical = np.searchsorted(np.sort(pose), poses) / draws
    assert np.max(np.abs(empirical - pose_cdf)) < 2.0 / np.sqrt(draws)


def test_parents_that_are_off_are_never_selected():
    rng = np.random.default_rng(9)
    params = random_params(rng, 2, 3, 2)
    params["pose_predictions"][0] = 50.0  # the off parent predicts far away
    conditional = make_conditional(params, [0.0, 1.0])
    value = {"presence": np.ones(3), "pose": np.full((3, 2), 50.0)}
    posterior = conditional.selection_posterior(value).numpy()
    np.testing.assert_array_equal(posterior[1], 0.0)


@pytest.mark.parametrize("temperature", [None, 1.0])
def test_gradients_are_finite_at_hard_points(temperature):
    """All parents off, saturated presence probabilities, poses far out."""
    params = random_params(np.random.default_rng(10), 2, 3, 6)
    params["presence_logits"][:] = 60.0
    parents = tf.Variable([0.0, 0.0], dtype=tf.float64)
    predictions = tf.Variable(params["pose_predictions"] * 1e3)
    with tf.GradientTape() as tape:
        params_in = dict(params, pose_predictions=predictions)
        conditional = make_conditional(params_in, parents, temperature)
        value = {
            conditional.presence_key: tf.constant([1.0, 0.0, 1.0], tf.float64)
            * (1 if temperature is None else 200.0),
            "pose": tf.zeros((3, 6), tf.float64),
        }
        log_prob = conditional.log_prob(value)
    gradients = tape.gradient(log_prob, [parents, predictions])
    assert np.isfinite(log_prob.numpy())
    for gradient in gradients:
        assert np.all(np.isfinite(gradient.numpy()))
