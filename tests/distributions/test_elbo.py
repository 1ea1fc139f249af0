"""The bound: its terms agree with the model's densities; finite gradients."""

import numpy as np
import tensorflow as tf

from keras_capsules import distributions
from tests.distributions.tiny_decoder import tiny_decoder


def posteriors(rng, scales):
    def posterior(n):
        return distributions.CapsulePosterior(
            tf.Variable(rng.normal(size=(2, n)).astype("float32")),
            tf.Variable((rng.normal(size=(2, n, 6)) * 0.2).astype("float32")),
            tf.fill((2, n, 6), 0.1) if scales else None,
            temperature=1.0,
        )

    return posterior(3), posterior(2)


def test_elbo_is_log_joint_minus_log_q_at_its_draws():
    decoder = tiny_decoder(num_top_capsules=2, num_template_capsules=3)
    model = decoder.generative_model()
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(2, 8, 8, 1)).astype("float32")
    for scales in (False, True):
        q_templates, q_top = posteriors(rng, scales)
        terms = distributions.capsule_elbo(
            model, images, q_templates, lambda _, q=q_top: q, seed=(3, 4)
        )
        expected = model.log_joint(images, terms["top"], terms["templates"]) - (
            q_templates.log_prob(terms["templates"])
            + q_top.log_prob(terms["top"])
        )
        np.testing.assert_allclose(terms["elbo"], expected, rtol=1e-5)


def test_elbo_gradients_are_finite():
    decoder = tiny_decoder(num_top_capsules=2, num_template_capsules=3)
    rng = np.random.default_rng(1)
    images = rng.uniform(size=(2, 8, 8, 1)).astype("float32")
    q_templates, q_top = posteriors(rng, scales=True)
    variables = [
        *decoder.trainable_weights,
        q_templates.presence_logits,
        q_templates.pose_means,
        q_top.presence_logits,
        q_top.pose_means,
    ]
    with tf.GradientTape() as tape:
        terms = distributions.capsule_elbo(
            decoder.generative_model(),
            images,
            q_templates,
            lambda _: q_top,
            seed=(5, 6),
        )
        elbo = tf.reduce_mean(terms["elbo"])
    gradients = tape.gradient(elbo, variables)
    assert np.isfinite(elbo.numpy())
    for gradient in gradients:
        assert gradient is not None
        assert np.all(np.isfinite(gradient.numpy()))
