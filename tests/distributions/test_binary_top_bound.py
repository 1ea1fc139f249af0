"""The bound with Bernoulli top-layer presences against NumPy versions
written from eqs. 1-9 (every presence vector and every selection
enumerated), exact and by draws."""

import itertools

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules import distributions
from keras_capsules.distributions import binary_top_bound
from tests.distributions import generative_reference as reference
from tests.distributions.random_model import random_model
from tests.distributions.tiny_decoder import tiny_decoder


def reference_log_likelihoods(params, logits, poses, templates, temperature):
    """Per presence vector `b` of the parents: `q(b)` and
    `log p(children | b, A)`, by enumeration."""
    conditional_params = {
        **params,
        "pose_predictions": reference.child_pose_predictions(
            poses, params["pose_offsets"]
        ),
    }
    probabilities = reference.sigmoid(logits)
    weights, log_likelihoods = [], []
    for vector in itertools.product((0.0, 1.0), repeat=len(logits)):
        vector = np.array(vector)
        weights.append(
            np.prod(np.where(vector == 1.0, probabilities, 1.0 - probabilities))
        )
        log_likelihoods.append(
            reference.brute_force_log_prob(
                vector, *templates, conditional_params, temperature
            )
        )
    return np.array(weights), np.array(log_likelihoods)


def reference_of_row(params, logits, poses, templates, row, temperature):
    """`reference_log_likelihoods` of one image of a batch."""
    return reference_log_likelihoods(
        params,
        logits[row],
        poses[row],
        (templates["presence_logit"][row], templates["pose"][row]),
        temperature,
    )


def random_inputs(rng, batch, n_p, n_c, logit_scale=1.0):
    logits = rng.normal(0.0, logit_scale, (batch, n_p))
    poses = rng.normal(0.0, 0.3, (batch, n_p, 6))
    templates = {
        "presence_logit": rng.normal(1.0, 2.0, (batch, n_c)),
        "pose": rng.normal(0.0, 0.3, (batch, n_c, 6)),
    }
    return logits, poses, templates


def expected(model, logits, poses, templates, num_draws=None, seed=(0, 0)):
    return binary_top_bound.expected_log_likelihood(
        model,
        tf.constant(logits),
        tf.constant(poses),
        {key: tf.constant(value) for key, value in templates.items()},
        num_draws,
        tf.constant(seed),
    ).numpy()


@pytest.mark.parametrize("logit_scale", [1.0, 40.0])
def test_exact_expectation_matches_enumeration(logit_scale):
    # Scale 40: presences saturated to 0 or 1 in float64, so one presence
    # vector carries all the weight.
    rng = np.random.default_rng(0)
    n_p, n_c = 3, 3
    model, params = random_model(rng, n_p, n_c, temperature=1.0)
    logits, poses, templates = random_inputs(rng, 2, n_p, n_c, logit_scale)
    measured = expected(model, logits, poses, templates)
    for b in range(2):
        weights, log_likelihoods = reference_of_row(
            params, logits, poses, templates, b, temperature=1.0
        )
        np.testing.assert_allclose(
            measured[b], np.sum(weights * log_likelihoods), rtol=1e-9
        )


def test_draws_estimate_the_exact_expectation():
    rng = np.random.default_rng(1)
    n_p, n_c = 3, 2
    model, params = random_model(rng, n_p, n_c, temperature=0.5)
    logits, poses, templates = random_inputs(rng, 2, n_p, n_c)
    draws = 4000
    measured = expected(model, logits, poses, templates, draws, seed=(3, 4))
    for b in range(2):
        weights, log_likelihoods = reference_of_row(
            params, logits, poses, templates, b, temperature=0.5
        )
        mean = np.sum(weights * log_likelihoods)
        spread = np.sqrt(np.sum(weights * (log_likelihoods - mean) ** 2))
        assert spread > 0.1  # The draws have something to estimate.
        assert abs(measured[b] - mean) < 5.0 * spread / np.sqrt(draws)


def test_bernoulli_kl_matches_numpy_and_stays_finite_when_saturated():
    logits = np.array([[-3.0, 0.0, 2.5], [60.0, -60.0, 0.0]])
    prior = np.array([0.5, -1.0, 4.0])
    measured = binary_top_bound.bernoulli_kl(
        tf.constant(logits), tf.constant(prior)
    ).numpy()
    q, p = reference.sigmoid(logits), reference.sigmoid(prior)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = q * np.log(q / p) + (1 - q) * np.log((1 - q) / (1 - p))
    np.testing.assert_allclose(measured[0], terms[0].sum(), rtol=1e-12)
    # Saturated: q = 1 for the first parent (its KL -log p), 0 for the
    # second (-log(1 - p)), up to exp(-60).
    saturated = -np.log(p[0]) - np.log(1 - p[1]) + terms[1, 2]
    np.testing.assert_allclose(measured[1], saturated, rtol=1e-12)


@pytest.mark.parametrize("pose_scales", [False, True])
def test_bound_is_its_terms_and_at_certain_presences_the_log_joint(
    pose_scales,
):
    """With every `q(t^0_i)` at 0 or 1 the bound is the log joint of that
    presence vector and the draws, minus `log q` of the draws."""
    decoder = tiny_decoder(num_top_capsules=3, num_template_capsules=4)
    model = decoder.generative_model()
    rng = np.random.default_rng(2)
    images = rng.uniform(size=(2, 8, 8, 1)).astype("float32")
    vector = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], np.float32)
    q_templates = distributions.CapsulePosterior(
        tf.constant(rng.normal(size=(2, 4)).astype("float32")),
        tf.constant((rng.normal(size=(2, 4, 6)) * 0.2).astype("float32")),
        tf.fill((2, 4, 6), 0.1) if pose_scales else None,
        temperature=1.0,
    )
    q_top = distributions.CapsulePosterior(
        tf.constant(60.0 * (2.0 * vector - 1.0)),
        tf.constant((rng.normal(size=(2, 3, 6)) * 0.2).astype("float32")),
        tf.fill((2, 3, 6), 0.1) if pose_scales else None,
        temperature=1.0,
    )
    seed = tf.constant([5, 6])
    terms = distributions.binary_top_elbo(
        model, images, q_templates, lambda _: q_top, seed
    )
    np.testing.assert_allclose(
        terms["elbo"],
        terms["reconstruction"] - terms["template_kl"] - terms["top_kl"],
        rtol=1e-6,
    )
    # The same draws the bound made (its seed split, in its order).
    template_seed, pose_seed, _ = tfp.random.split_seed(seed, 3)
    templates = q_templates.sample(template_seed)
    poses = q_top.sample(pose_seed)["pose"]
    unrelaxed_top = distributions.CapsulePrior(
        model.top_presence_logits, distributions.POSE_DIM
    )
    log_joint = (
        unrelaxed_top.log_prob({"presence": vector, "pose": poses})
        + model.template_conditional_given(vector, poses).log_prob(templates)
        + model.image_likelihood(templates).log_prob(images)
    )
    log_q = q_templates.log_prob(templates)
    if pose_scales:
        log_q += np.sum(
            np.log(
                reference.normal_pdf(
                    poses.numpy(), q_top.pose_means.numpy(), 0.1
                )
            ),
            (-2, -1),
        )
    np.testing.assert_allclose(
        terms["elbo"], log_joint - log_q, rtol=1e-5, atol=1e-3
    )


def test_bad_draw_counts_and_too_many_parents_for_enumeration_are_refused():
    rng = np.random.default_rng(3)
    model, _ = random_model(rng, 2, 2, temperature=1.0)
    logits, poses, templates = random_inputs(rng, 1, 2, 2)
    with pytest.raises(ValueError, match="Received: 0"):
        expected(model, logits, poses, templates, num_draws=0)
    many = binary_top_bound.MAX_ENUMERATED_PARENTS + 1
    with pytest.raises(ValueError, match=f"n0 = {many}"):
        binary_top_bound.expected_log_likelihood(
            model,
            tf.zeros((1, many), tf.float64),
            tf.zeros((1, many, 6), tf.float64),
            {key: tf.constant(value) for key, value in templates.items()},
            None,
            tf.constant([0, 0]),
        )


def test_score_function_gradient_estimates_the_exact_gradient():
    """The draws' gradient in the presence logits (score function with
    leave-one-out baselines) against the exact expectation's, over many
    seeds: its mean within 5 standard errors."""
    rng = np.random.default_rng(4)
    n_p, n_c = 3, 3
    model, _ = random_model(rng, n_p, n_c, temperature=1.0)
    logits, poses, templates = random_inputs(rng, 1, n_p, n_c)
    logits = tf.Variable(logits)
    templates = {key: tf.constant(value) for key, value in templates.items()}

    def gradient(num_draws, seed):
        with tf.GradientTape() as tape:
            value = binary_top_bound.expected_log_likelihood(
                model,
                logits,
                tf.constant(poses),
                templates,
                num_draws,
                tf.constant([seed, 0]),
            )
        return tape.gradient(value, logits).numpy()[0]

    exact = gradient(None, 0)
    estimates = np.array([gradient(8, seed) for seed in range(300)])
    error = np.abs(estimates.mean(0) - exact)
    standard_error = estimates.std(0) / np.sqrt(len(estimates))
    assert np.all(np.abs(exact) > 1e-3)  # Something to estimate.
    assert np.all(error < 5.0 * standard_error), (error, standard_error)


def test_a_share_of_the_batch_draws_its_rows_of_the_whole_batch():
    rng = np.random.default_rng(5)
    model, _ = random_model(rng, 3, 2, temperature=1.0)
    logits, poses, templates = random_inputs(rng, 5, 3, 2)
    whole = expected(model, logits, poses, templates, 4, seed=(7, 8))
    share = binary_top_bound.expected_log_likelihood(
        model,
        tf.constant(logits[2:4]),
        tf.constant(poses[2:4]),
        {key: tf.constant(value[2:4]) for key, value in templates.items()},
        4,
        tf.constant([7, 8]),
        rows=(2, 5),
    ).numpy()
    np.testing.assert_allclose(share, whole[2:4], rtol=1e-12)


def tiny_bound_inputs(batch, seed=6):
    """A tiny decoder's relaxed model, images and posteriors of both
    layers (variables, so gradients can be taken)."""
    model = tiny_decoder(
        num_top_capsules=3, num_template_capsules=4
    ).generative_model()
    rng = np.random.default_rng(seed)

    def posterior(n):
        return distributions.CapsulePosterior(
            tf.Variable(rng.normal(size=(batch, n)).astype("float32")),
            tf.Variable((rng.normal(size=(batch, n, 6)) * 0.2).astype("f4")),
            tf.fill((batch, n, 6), 0.1),
            temperature=1.0,
        )

    images = rng.uniform(size=(batch, 8, 8, 1)).astype("float32")
    return model, images, posterior(4), posterior(3)


def test_a_share_of_the_batch_has_its_rows_of_the_whole_batchs_bound():
    model, images, q_templates, q_top = tiny_bound_inputs(5)

    def rows_of(posterior, start, stop):
        return distributions.CapsulePosterior(
            posterior.presence_logits[start:stop],
            posterior.pose_means[start:stop],
            posterior.pose_scales[start:stop],
            posterior.temperature,
        )

    seed = tf.constant([2, 3])
    whole = distributions.binary_top_elbo(
        model, images, q_templates, lambda _: q_top, seed, num_draws=4
    )
    share = distributions.binary_top_elbo(
        model,
        images[1:3],
        rows_of(q_templates, 1, 3),
        lambda _: rows_of(q_top, 1, 3),
        seed,
        num_draws=4,
        rows=(1, 5),
    )
    np.testing.assert_allclose(share["elbo"], whole["elbo"][1:3], rtol=1e-6)


def test_stop_gradient_leaves_the_templates_only_their_own_terms():
    model, images, q_templates, q_top = tiny_bound_inputs(2)
    variables = [q_templates.presence_logits, q_templates.pose_means]
    gradients, values = {}, {}
    for stop in (False, True):
        with tf.GradientTape(persistent=True) as tape:
            terms = distributions.binary_top_elbo(
                model,
                images,
                q_templates,
                lambda _: q_top,
                tf.constant([4, 5]),
                num_draws=3,
                stop_gradient_between_layers=stop,
            )
            own_terms = tf.reduce_sum(
                terms["reconstruction"]
                - q_templates.log_prob(terms["templates"])
            )
            total = tf.reduce_sum(terms["elbo"])
        gradients[stop] = tape.gradient(total, variables)
        values[stop] = total.numpy()
        if stop:
            own = tape.gradient(own_terms, variables)
    assert values[True] == values[False]
    for cut, full, expected in zip(gradients[True], gradients[False], own):
        np.testing.assert_allclose(cut, expected, rtol=1e-5, atol=1e-5)
        assert np.abs(np.asarray(full) - np.asarray(cut)).max() > 1e-3
