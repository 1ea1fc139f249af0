"""The class-parents script: the presences it trains with are the ones
its docstring names, and it runs end to end."""

import json
import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver

from keras_capsules import distributions, models
from research import class_parents


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    config = models.GenerativeCapsuleConfig(
        num_top_capsules=4,
        num_template_capsules=5,
        template_size=8,
        top_pose_refinement_steps=2,
    )
    return models.generative_capsule_autoencoder((40, 40, 1), config, seed=3)


def templates_of(model, count=3):
    images = np.random.default_rng(1).uniform(size=(count, 40, 40, 1))
    return model.template_posterior(images.astype("float32")).mode()


def test_class_presences_are_the_labels_and_poses_their_em_fit(model):
    templates = templates_of(model)
    labels = tf.constant([2, 0, 3])
    posterior = class_parents.class_posterior_fn(model, labels)(templates)
    present = tf.sigmoid(posterior.presence_logits).numpy()
    np.testing.assert_allclose(present, tf.one_hot(labels, 4), atol=1e-12)
    encoder = model.posterior_from_parameters(
        model.top_encoder(model.template_capsules(templates))
    )
    generative = model.decoder.generative_model()
    start = {
        generative.presence_key: posterior.presence_logits,
        "pose": encoder.pose_means,
    }
    expected = distributions.refine_parent_poses(
        generative, start, templates, 2
    )
    np.testing.assert_allclose(posterior.pose_means, expected, atol=1e-5)


def test_best_single_parent_is_the_argmax_of_one_parent_at_a_time(model):
    templates = templates_of(model)
    generative = model.decoder.generative_model()
    encoder = model.posterior_from_parameters(
        model.top_encoder(model.template_capsules(templates))
    )
    scores, poses = class_parents.single_parent_choices(model, templates)
    # Each parent alone, one at a time, as the module docstring writes it.
    prior = distributions.CapsulePrior(
        generative.top_presence_logits, distributions.POSE_DIM
    )
    for parent in range(4):
        alone = tf.one_hot(tf.fill([3], parent), 4)
        top = {
            generative.presence_key: 30.0 * (2.0 * alone - 1.0),
            "pose": encoder.pose_means,
        }
        top["pose"] = distributions.refine_parent_poses(
            generative, top, templates, 2
        )
        expected = generative.template_conditional(top).log_prob(
            templates
        ) + prior.log_prob({"presence": alone, "pose": top["pose"]})
        np.testing.assert_allclose(scores[:, parent], expected, rtol=1e-5)
        np.testing.assert_allclose(poses[:, parent], top["pose"], atol=1e-5)
    posterior = class_parents.best_single_posterior_fn(model)(templates)
    best = np.argmax(np.asarray(scores), -1)
    np.testing.assert_allclose(
        tf.sigmoid(posterior.presence_logits), tf.one_hot(best, 4), atol=1e-12
    )
    np.testing.assert_allclose(
        posterior.pose_means, np.asarray(poses)[np.arange(3), best], atol=1e-6
    )
    assert np.ptp(np.asarray(scores), axis=1).min() > 1e-3  # Not all equal.


# Long (two runs of the script); research scripts reproduce written-down
# measurements and are not the library: `make test-all` runs them.
@pytest.mark.slow
def test_script_writes_its_lines():
    directory = tempfile.mkdtemp()
    output = os.path.join(directory, "class_parents.jsonl")
    saved = os.path.join(directory, "runs", "tiny", "model.keras")
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    tiny = dict(
        train_size=64,
        test_size=40,
        epochs=1,
        jit_compile="false",
        preset="paper:num_top_capsules=10,num_template_capsules=6,"
        "template_size=8,top_pose_refinement_steps=1",
        class_parents_output=output,
    )
    with flagsaver.flagsaver(
        given_presences="best_single",
        equipartition_temperature=1.0,
        class_parents_save_to=saved,
        **tiny,
    ):
        class_parents.main(["prog"])
    # The second run evaluates the first's model beside its own.
    with flagsaver.flagsaver(
        given_presences="class", class_parents_free_model=saved, **tiny
    ):
        class_parents.main(["prog"])
    with open(output) as file:
        first, second = (json.loads(line) for line in file.read().splitlines())
    assert (first["given_presences"], second["given_presences"]) == (
        "best_single",
        "class",
    )
    for row in (first, second):
        assert len(row["train_bound"]) == 1
        assert set(row["test_bound"]) == {
            "own",
            "class",
            "evidence_single",
            "best_single",
        }
        for terms in row["test_bound"].values():
            assert np.isfinite(terms["elbo"])
        assert np.sum(row["chosen"]["counts"]) == 40
        for probe in row["probe"].values():
            assert 0.0 <= probe <= 1.0
    # The oracle's parent is the label: every parent is pure.
    assert second["chosen"]["class_purity"] == 1.0
    assert second["free_model"] == saved
    assert set(second["free_test_bound"]) == set(second["test_bound"])
