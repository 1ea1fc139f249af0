"""The mean-field presence step against a NumPy version written from
eqs. 1, 3-6 and 9 (enumeration over every selection)."""

import numpy as np
import tensorflow as tf

from keras_capsules import distributions
from tests.distributions import generative_reference as reference
from tests.distributions.random_model import random_model


def reference_logits(params, presences, poses, templates, temperature):
    """logit p_i + log p(children | t_i = 1, t_-i) - (same, t_i = 0), each
    log density by enumeration over every selection."""
    n_p = len(presences)
    conditional_params = {
        **params,
        "pose_predictions": reference.child_pose_predictions(
            poses, params["pose_offsets"]
        ),
    }
    logits = np.zeros(n_p)
    for i in range(n_p):
        on, off = presences.copy(), presences.copy()
        on[i], off[i] = 1.0, 0.0
        logits[i] = params["top_presence_logits"][i] + (
            reference.brute_force_log_prob(
                on, *templates, conditional_params, temperature
            )
            - reference.brute_force_log_prob(
                off, *templates, conditional_params, temperature
            )
        )
    return logits


def check_against_reference(rng, presences, temperature=1.0):
    n_p, n_c = presences.shape[-1], 4
    model, params = random_model(rng, n_p, n_c, temperature)
    batch = len(presences)
    poses = rng.normal(0.0, 0.3, (batch, n_p, 6))
    template_presences = rng.normal(1.0, 2.0, (batch, n_c))
    template_poses = rng.normal(0.0, 0.3, (batch, n_c, 6))
    measured = distributions.parent_presence_logits(
        model,
        tf.constant(presences),
        tf.constant(poses),
        {
            "presence_logit": tf.constant(template_presences),
            "pose": tf.constant(template_poses),
        },
    )
    for b in range(batch):
        expected = reference_logits(
            params,
            presences[b],
            poses[b],
            (template_presences[b], template_poses[b]),
            temperature,
        )
        np.testing.assert_allclose(measured[b], expected, rtol=1e-9)


def test_step_matches_enumeration_at_an_ordinary_point():
    rng = np.random.default_rng(0)
    check_against_reference(rng, rng.uniform(0.0, 1.0, (3, 3)))


def test_step_matches_enumeration_when_every_other_parent_is_off():
    # Switching a parent off then leaves only the dummy parent.
    rng = np.random.default_rng(1)
    check_against_reference(rng, np.zeros((2, 3)), temperature=0.5)


def test_step_matches_enumeration_at_saturated_presences():
    rng = np.random.default_rng(2)
    check_against_reference(rng, np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]))


def test_a_parent_no_child_selects_keeps_its_prior_logit():
    # With affinity exp(-800) the parent's share of every child is 0 in
    # float64, whether it is on or off.
    rng = np.random.default_rng(3)
    model, _ = random_model(rng, 2, 4, 1.0)
    log_affinities = model.log_affinities.numpy()
    log_affinities[1] = -800.0
    model.log_affinities = tf.constant(log_affinities)
    measured = distributions.parent_presence_logits(
        model,
        tf.constant([[0.7, 0.4]], tf.float64),
        tf.constant(rng.normal(0.0, 0.3, (1, 2, 6))),
        {
            "presence_logit": tf.constant(rng.normal(0.0, 2.0, (1, 4))),
            "pose": tf.constant(rng.normal(0.0, 0.3, (1, 4, 6))),
        },
    )
    np.testing.assert_allclose(
        measured[0, 1], model.top_presence_logits[1], rtol=1e-12
    )
    assert abs(measured[0, 0] - model.top_presence_logits[0]) > 1e-3


def test_step_gives_finite_gradients_in_float32():
    rng = np.random.default_rng(4)
    model, _ = random_model(rng, 3, 4, 1.0)
    presences = tf.Variable(np.array([[0.0, 1.0, 0.5]], np.float32))
    poses = tf.Variable(rng.normal(0.0, 0.3, (1, 3, 6)).astype(np.float32))
    model32 = distributions.GenerativeCapsuleModel(
        **{
            key: (
                tf.cast(value, tf.float32)
                if isinstance(value, tf.Tensor)
                else value
            )
            for key, value in vars(model).items()
        }
    )
    with tf.GradientTape() as tape:
        logits = distributions.parent_presence_logits(
            model32,
            presences,
            poses,
            {
                "presence_logit": tf.constant([[20.0, -20.0, 0.0, 3.0]]),
                "pose": tf.constant(
                    rng.normal(0.0, 3.0, (1, 4, 6)).astype(np.float32)
                ),
            },
        )
        total = tf.reduce_sum(logits)
    assert np.all(np.isfinite(logits))
    for gradient in tape.gradient(total, [presences, poses]):
        assert np.all(np.isfinite(gradient))
