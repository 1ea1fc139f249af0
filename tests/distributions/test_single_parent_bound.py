"""The single-parent posterior and its bound against NumPy versions
written from eqs. 1-9 (every selection enumerated); balanced assignments
against a Sinkhorn-Knopp loop in probability space."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import distributions
from tests.distributions import generative_reference as reference
from tests.distributions.random_model import random_model

N_P, N_C, BATCH = 3, 3, 2


def reference_terms(params, parent_poses, templates, temperature):
    """`(log_likelihoods, log_priors)`, `(batch, n0)`, by enumeration: the
    template layer's log density with parent `i` alone present at poses
    `parent_poses[b, i]`, and `log p(t^0 = e_i) + log N(A^0; 0, I)`."""
    batch, num_parents = parent_poses.shape[:2]
    top_logits = params["top_presence_logits"]
    log_likelihoods = np.zeros((batch, num_parents))
    log_priors = np.zeros((batch, num_parents))
    for b in range(batch):
        for i in range(num_parents):
            alone = np.eye(num_parents)[i]
            poses = parent_poses[b, i]
            conditional_params = {
                **params,
                "pose_predictions": reference.child_pose_predictions(
                    poses, params["pose_offsets"]
                ),
            }
            log_likelihoods[b, i] = reference.brute_force_log_prob(
                alone,
                templates["presence_logit"][b],
                templates["pose"][b],
                conditional_params,
                temperature,
            )
            probabilities = reference.sigmoid(top_logits)
            log_priors[b, i] = np.sum(
                np.log(np.where(alone == 1, probabilities, 1 - probabilities))
            ) + np.sum(np.log(reference.normal_pdf(poses, 0.0, 1.0)))
    return log_likelihoods, log_priors


def random_single_parent_inputs(rng, temperature=1.0):
    model, params = random_model(rng, N_P, N_C, temperature)
    template_posterior = distributions.CapsulePosterior(
        tf.constant(rng.normal(0.5, 1.5, (BATCH, N_C))),
        tf.constant(rng.normal(0.0, 0.3, (BATCH, N_C, 6))),
        None,
        temperature,
    )
    parent_poses = rng.normal(0.0, 0.3, (BATCH, N_P, N_P, 6))
    return model, params, template_posterior, parent_poses


def bound(model, template_posterior, log_probabilities, parent_poses):
    top = distributions.SingleParentPosterior(
        tf.constant(log_probabilities),
        tf.constant(parent_poses),
        model.temperature,
    )
    return distributions.single_parent_elbo(
        model,
        tf.zeros((BATCH, 4, 4, 1), tf.float64),
        template_posterior,
        lambda _: top,
        tf.constant([3, 4]),
    )


def template_log_q(template_posterior, templates, temperature):
    """`log q(t^1, A^1 | X)` of a delta-pose template posterior: the
    relaxed presences' Logistic densities (eq. 2.3's Concrete)."""
    return np.sum(
        np.log(
            reference.logistic_pdf(
                templates["presence_logit"],
                template_posterior.presence_logits.numpy() / temperature,
                1.0 / temperature,
            )
        ),
        -1,
    )


def test_terms_match_enumeration():
    rng = np.random.default_rng(0)
    model, params, template_posterior, parent_poses = (
        random_single_parent_inputs(rng)
    )
    log_q = np.log(rng.dirichlet(np.ones(N_P), BATCH))
    terms = bound(model, template_posterior, log_q, parent_poses)
    templates = {
        key: value.numpy() for key, value in terms["templates"].items()
    }
    log_likelihoods, log_priors = reference_terms(
        params, parent_poses, templates, 1.0
    )
    q = np.exp(log_q)
    np.testing.assert_allclose(
        terms["template_kl"],
        template_log_q(template_posterior, templates, 1.0)
        - np.sum(q * log_likelihoods, -1),
        rtol=1e-9,
    )
    np.testing.assert_allclose(
        terms["top_kl"], np.sum(q * (log_q - log_priors), -1), rtol=1e-9
    )
    np.testing.assert_allclose(
        terms["elbo"],
        terms["reconstruction"] - terms["template_kl"] - terms["top_kl"],
        rtol=1e-12,
    )
    measured = distributions.single_parent_terms(
        model, tf.constant(parent_poses), terms["templates"]
    )
    np.testing.assert_allclose(measured[0], log_likelihoods, rtol=1e-9)
    np.testing.assert_allclose(measured[1], log_priors, rtol=1e-9)


def test_the_exact_posterior_gives_the_logsumexp_and_the_highest_bound():
    rng = np.random.default_rng(1)
    model, params, template_posterior, parent_poses = (
        random_single_parent_inputs(rng, temperature=0.5)
    )
    uniform = np.full((BATCH, N_P), -np.log(N_P))
    draw = bound(model, template_posterior, uniform, parent_poses)
    templates = {key: value.numpy() for key, value in draw["templates"].items()}
    log_joints = np.sum(
        reference_terms(params, parent_poses, templates, 0.5), 0
    )
    exact = log_joints - np.logaddexp.reduce(log_joints, -1, keepdims=True)
    terms = bound(model, template_posterior, exact, parent_poses)
    np.testing.assert_allclose(
        terms["elbo"],
        terms["reconstruction"]
        - template_log_q(template_posterior, templates, 0.5)
        + np.logaddexp.reduce(log_joints, -1),
        rtol=1e-9,
    )
    assert np.all(terms["elbo"] > draw["elbo"])


@pytest.mark.parametrize("impossible", [-np.inf, -1e30])
def test_one_certain_parent_is_the_binary_bound_at_its_presences(impossible):
    rng = np.random.default_rng(2)
    model, _, template_posterior, parent_poses = random_single_parent_inputs(
        rng
    )
    chosen = np.array([2, 0])
    log_q = np.where(np.eye(N_P)[chosen] == 1, 0.0, impossible)
    terms = bound(model, template_posterior, log_q, parent_poses)
    assert all(np.all(np.isfinite(terms[key])) for key in ("elbo", "top_kl"))
    poses = parent_poses[np.arange(BATCH), chosen]
    binary = distributions.binary_top_elbo(
        model,
        tf.zeros((BATCH, 4, 4, 1), tf.float64),
        template_posterior,
        lambda _: distributions.CapsulePosterior(
            tf.constant(60.0 * (2.0 * np.eye(N_P)[chosen] - 1.0)),
            tf.constant(poses),
            None,
            1.0,
        ),
        tf.constant([3, 4]),
    )
    np.testing.assert_allclose(terms["elbo"], binary["elbo"], rtol=1e-9)


def test_choices_without_pose_steps_score_the_starting_poses():
    rng = np.random.default_rng(3)
    model, params, template_posterior, _ = random_single_parent_inputs(rng)
    start = rng.normal(0.0, 0.3, (BATCH, N_P, 6))
    templates = template_posterior.sample(tf.constant([0, 1]))
    scores, poses = distributions.single_parent_choices(
        model, tf.constant(start), templates, num_pose_steps=0
    )
    # Row i: parent i at its starting pose, the absent parents at 0.
    expected_poses = np.eye(N_P)[None, :, :, None] * start[:, None]
    np.testing.assert_array_equal(poses, expected_poses)
    templates = {key: value.numpy() for key, value in templates.items()}
    np.testing.assert_allclose(
        scores,
        np.sum(reference_terms(params, expected_poses, templates, 1.0), 0),
        rtol=1e-9,
    )


def test_choices_with_pose_steps_equal_one_parent_at_a_time():
    rng = np.random.default_rng(4)
    model, _, template_posterior, _ = random_single_parent_inputs(rng)
    start = tf.constant(rng.normal(0.0, 0.3, (BATCH, N_P, 6)))
    templates = template_posterior.sample(tf.constant([0, 1]))
    scores, poses = distributions.single_parent_choices(
        model, start, templates, num_pose_steps=2
    )
    prior = distributions.CapsulePrior(
        model.top_presence_logits, distributions.POSE_DIM
    )
    for parent in range(N_P):
        alone = tf.constant(np.tile(np.eye(N_P)[parent], (BATCH, 1)))
        refined = distributions.refine_parent_poses_given(
            model, alone, alone[..., None] * start, templates, 2
        )
        np.testing.assert_allclose(poses[:, parent], refined, rtol=1e-9)
        expected = model.template_conditional_given(alone, refined).log_prob(
            templates
        ) + prior.log_prob({"presence": alone, "pose": refined})
        np.testing.assert_allclose(scores[:, parent], expected, rtol=1e-9)
    # Absent parents get no weight from any child: their poses stay at 0.
    absent = 1.0 - np.eye(N_P)[None, :, :, None]
    assert np.all(np.asarray(poses) * absent == 0.0)


def sinkhorn_reference(scores, temperature, num_iterations):
    """Sinkhorn-Knopp in probability space: alternately scale the
    columns to sum to 1 and the rows to sum to 1."""
    weights = np.exp((scores - scores.max()) / temperature)
    for _ in range(num_iterations):
        weights = weights / weights.sum(0, keepdims=True)
        weights = weights / weights.sum(1, keepdims=True)
    return weights


@pytest.mark.parametrize("temperature", [0.5, 4.0])
def test_balanced_assignments_match_sinkhorn(temperature):
    rng = np.random.default_rng(5)
    scores = rng.normal(0.0, 3.0, (12, 4))
    scores[:, 0] += 5.0  # One parent explains every image best.
    measured = distributions.balanced_assignments(
        tf.constant(scores), temperature
    ).numpy()
    expected = sinkhorn_reference(scores, temperature, 10)
    np.testing.assert_allclose(np.exp(measured), expected, rtol=1e-9)
    np.testing.assert_allclose(np.exp(measured).sum(1), 1.0, rtol=1e-12)
    plain = np.exp(scores / temperature)
    plain /= plain.sum(1, keepdims=True)
    assert plain.sum(0)[0] > 6.0  # Unbalanced: parent 0 takes most...
    # ...balanced, every parent about a quarter of the 12 images.
    converged = distributions.balanced_assignments(
        tf.constant(scores), temperature, num_iterations=500
    ).numpy()
    np.testing.assert_allclose(np.exp(converged).sum(0), 3.0, rtol=1e-6)


def test_balanced_assignments_stay_finite_far_apart_and_refuse_no_temperature():
    scores = tf.constant([[0.0, -5000.0], [-4000.0, 0.0], [1e4, 0.0]])
    measured = distributions.balanced_assignments(scores, 1.0)
    assert np.all(np.isfinite(measured))
    with pytest.raises(ValueError, match="Received: 0"):
        distributions.balanced_assignments(scores, 0)


def test_balanced_choices_spread_one_best_parent_and_keep_clear_ones():
    rng = np.random.default_rng(0)
    # One parent best for every image: the plain argmax picks it
    # everywhere, the balanced choice spreads the images.
    skewed = tf.constant(rng.normal(size=(8, 4)), tf.float32) + [5.0, 0, 0, 0]
    assert set(np.argmax(skewed.numpy(), 1)) == {0}
    balanced = np.argmax(distributions.balanced_assignments(skewed, 1.0), 1)
    assert len(set(balanced)) >= 3
    # Scores already balanced (a different best parent per image) keep
    # their choices.
    clear = tf.constant(np.eye(4)[[0, 1, 2, 3, 0, 1, 2, 3]] * 20.0, tf.float32)
    np.testing.assert_array_equal(
        np.argmax(distributions.balanced_assignments(clear, 1.0), 1),
        [0, 1, 2, 3, 0, 1, 2, 3],
    )


def test_posterior_summaries_and_mode():
    # Row 1: q_0 rounds to 1.
    log_q = np.array([np.log([0.7, 0.2, 0.1]), [0.0, -60.0, -80.0]])
    poses = np.random.default_rng(6).normal(size=(BATCH, N_P, N_P, 6))
    present = np.eye(N_P)[[0, 0]]
    for temperature, key, expected_mode in (
        (None, "presence", present),
        (1.0, "presence_logit", 30.0 * (2.0 * present - 1.0)),
    ):
        posterior = distributions.SingleParentPosterior(
            tf.constant(log_q, tf.float32),
            tf.constant(poses, tf.float32),
            temperature,
        )
        np.testing.assert_allclose(
            posterior.presence_logits[0],
            np.log([0.7 / 0.3, 0.2 / 0.8, 0.1 / 0.9]),
            rtol=1e-5,
        )
        # logit q_0 = log q_0 - log(q_1 + q_2), though q_0 is 1 in float32.
        np.testing.assert_allclose(
            posterior.presence_logits[1, 0], 60.0, rtol=1e-5
        )
        # Parents of probability exactly 0: finite logits all the same.
        certain = distributions.SingleParentPosterior(
            tf.constant([[0.0, -np.inf, -np.inf]], tf.float32),
            tf.zeros((1, N_P, N_P, 6)),
            temperature,
        ).presence_logits.numpy()
        assert np.all(np.isfinite(certain)) and certain[0, 0] > 1e30
        assert certain[0, 1] < -1e30
        np.testing.assert_allclose(
            posterior.pose_means,
            np.stack([poses[:, i, i] for i in range(N_P)], 1),
            rtol=1e-6,
        )
        mode = posterior.mode()
        np.testing.assert_allclose(mode["pose"], poses[:, 0], rtol=1e-6)
        np.testing.assert_array_equal(mode[key], expected_mode)
