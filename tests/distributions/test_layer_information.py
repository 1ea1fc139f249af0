"""layer_information against a NumPy version written from its definition:
the posterior's KL to the prior minus that of the best image-independent
posterior."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import distributions
from tests.distributions.tiny_decoder import tiny_decoder


def bernoulli_kl(q, r):
    """KL(Bern(q) || Bern(r)) with 0 log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        on = np.where(q > 0, q * np.log(q / r), 0.0)
        off = np.where(q < 1, (1 - q) * np.log((1 - q) / (1 - r)), 0.0)
    return on + off


def reference(logits, poses):
    """Expected cost under the prior `Bern(p) x N(0, I)` minus the cost of
    the best constant posterior, for any p: the p-terms cancel, which this
    reference checks by computing both costs against a made-up prior."""
    logits = np.asarray(logits, np.float64)
    poses = np.asarray(poses, np.float64)
    q = 1 / (1 + np.exp(-logits))
    prior = np.linspace(0.2, 0.7, q.shape[1])
    mean_q = q.mean(0)
    presence = (
        bernoulli_kl(q, prior).sum(1).mean() - bernoulli_kl(mean_q, prior).sum()
    )
    pose_cost = 0.5 * (poses**2).sum((1, 2))  # -log N(A; 0, I) + const
    pose = pose_cost.mean() - 0.5 * (poses.mean(0) ** 2).sum()
    return presence, pose


def test_matches_reference_at_an_ordinary_point():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 2, (50, 5))
    poses = rng.normal(0.3, 0.7, (50, 5, 6))
    measured = distributions.layer_information(logits, poses)
    presence, pose = reference(logits, poses)
    np.testing.assert_allclose(
        measured["presence_information"], presence, rtol=1e-4
    )
    np.testing.assert_allclose(measured["pose_information"], pose, rtol=1e-5)
    np.testing.assert_allclose(
        measured["information"], presence + pose, rtol=1e-4
    )
    np.testing.assert_allclose(
        measured["pose_magnitude"], np.abs(poses).mean(), rtol=1e-5
    )
    q = 1 / (1 + np.exp(-logits))
    np.testing.assert_allclose(
        measured["presence_spread"], q.std(0).mean(), rtol=1e-4
    )


def test_zero_for_the_same_posterior_on_every_image():
    rng = np.random.default_rng(1)
    logits = np.tile(rng.normal(0, 3, (1, 4)), (30, 1))
    poses = np.tile(rng.normal(0, 2, (1, 4, 6)), (30, 1, 1))
    measured = distributions.layer_information(logits, poses)
    assert abs(float(measured["information"])) < 1e-5
    assert float(measured["presence_spread"]) < 1e-6
    assert float(measured["pose_magnitude"]) > 0.5


def test_saturated_presences_stay_finite_and_count_a_bit_each():
    # Half the images say "present" with certainty, half "absent": each
    # capsule then carries one bit, log 2 nats, about the image.
    logits = np.repeat([[60.0, -60.0], [-60.0, 60.0]], 10, axis=0)
    poses = np.zeros((20, 2, 6))
    measured = distributions.layer_information(logits, poses)
    np.testing.assert_allclose(
        measured["presence_information"], 2 * np.log(2), rtol=1e-5
    )
    assert float(measured["pose_information"]) == 0.0


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_all_images_certain_of_the_same_presence_carry_nothing(value):
    logits = np.full((8, 3), 80.0 if value else -80.0)
    measured = distributions.layer_information(logits, np.zeros((8, 3, 6)))
    assert np.isfinite(float(measured["presence_information"]))
    assert abs(float(measured["presence_information"])) < 1e-4


def test_explained_by_parents_is_zero_when_every_image_shares_its_parents():
    model = tiny_decoder().generative_model()
    rng = np.random.default_rng(7)
    top = {
        "presence_logit": tf.constant(
            np.tile(rng.normal(0, 2, (1, 3)), (8, 1)), tf.float32
        ),
        "pose": tf.constant(
            np.tile(rng.normal(0, 0.5, (1, 3, 6)), (8, 1, 1)), tf.float32
        ),
    }
    templates = {
        "presence_logit": tf.constant(rng.normal(0, 3, (8, 5)), tf.float32),
        "pose": tf.constant(rng.normal(0, 0.5, (8, 5, 6)), tf.float32),
    }
    explained = distributions.explained_by_parents(model, top, templates)
    np.testing.assert_allclose(explained, 0.0, atol=1e-4)


def test_explained_by_parents_counts_poses_that_predict_their_children():
    # Children drawn from each image's own parents: the parents' own poses
    # predict them (std c_ij = 0.15) far better than the poses averaged
    # over the images, which are about 0.5 away (the off-pose density
    # caps what a badly predicted child costs; 41 nats here).
    model = tiny_decoder().generative_model()
    rng = np.random.default_rng(8)
    top = {
        "presence_logit": tf.fill((64, 3), 6.0),
        "pose": tf.constant(rng.normal(0, 0.5, (64, 3, 6)), tf.float32),
    }
    templates = model.template_conditional(top).sample(seed=(1, 2))
    explained = distributions.explained_by_parents(model, top, templates)
    assert explained > 20.0, explained
    # The prior-cost measure sees only 0.5 x 0.25 per pose entry (2.25).
    information = distributions.layer_information(
        top["presence_logit"], top["pose"]
    )["pose_information"]
    assert information < explained / 5, (information, explained)
