"""The presence-evidence script: its presence logits are the prior's plus
the weighted, centred single-parent evidence, computed here by
evaluating the template layer's density with each parent alone present;
and it writes one line per weight, one for the model's own presences and
one for the single parent of highest evidence."""

import json
import os
import tempfile

import keras
import numpy as np
import pytest
import tensorflow as tf
from absl import flags
from absl.testing import flagsaver

from keras_capsules import models
from research import presence_evidence


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    config = models.GenerativeCapsuleConfig(
        num_top_capsules=4,
        num_template_capsules=5,
        template_size=8,
        top_pose_refinement_steps=1,
        top_presence_refinement_steps=1,
    )
    return models.generative_capsule_autoencoder((40, 40, 1), config, seed=3)


def single_parent_evidence(generative, poses, templates):
    """`(batch, n0)`: log p(templates | parent i alone present) minus log
    p(templates | no parent present), one parent at a time."""
    batch, num_parents = poses.shape[:2]

    def log_prob(presences):
        conditional = generative.template_conditional_given(presences, poses)
        return conditional.log_prob(templates)

    absent = log_prob(tf.zeros((batch, num_parents)))
    columns = [
        log_prob(tf.one_hot(tf.fill([batch], i), num_parents)) - absent
        for i in range(num_parents)
    ]
    return tf.stack(columns, axis=-1)


@pytest.mark.parametrize("weight", [0.0, 0.05, 1.0])
def test_presence_logits_follow_the_centred_evidence(model, weight):
    images = np.random.default_rng(0).uniform(size=(3, 40, 40, 1))
    templates = model.template_posterior(images).mode()
    own = model.top_posterior(templates)
    moved = presence_evidence.evidence_posterior_fn(model, weight)(templates)
    generative = model.decoder.generative_model()
    evidence = single_parent_evidence(generative, own.pose_means, templates)
    evidence = evidence - tf.reduce_mean(evidence, -1, keepdims=True)
    expected = generative.top_presence_logits + weight * evidence
    np.testing.assert_allclose(
        moved.presence_logits, expected, rtol=1e-4, atol=1e-3
    )
    np.testing.assert_array_equal(moved.pose_means, own.pose_means)
    assert float(tf.reduce_max(tf.abs(evidence))) > 1e-2  # Not all equal.


def test_single_parent_is_the_parent_of_highest_evidence_alone(model):
    images = np.random.default_rng(1).uniform(size=(3, 40, 40, 1))
    templates = model.template_posterior(images).mode()
    own = model.top_posterior(templates)
    single = presence_evidence.evidence_posterior_fn(
        model, presence_evidence.SINGLE_PARENT
    )(templates)
    evidence = single_parent_evidence(
        model.decoder.generative_model(), own.pose_means, templates
    )
    present = tf.sigmoid(single.presence_logits).numpy()
    expected = tf.one_hot(tf.argmax(evidence, -1), 4).numpy()
    np.testing.assert_allclose(present, expected, atol=1e-12)


# Long (a probe per evidence weight); research scripts reproduce
# written-down measurements and are not the library: `make test-all` runs
# them.
@pytest.mark.slow
def test_script_writes_a_line_per_weight(model):
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "model.keras")
    model.save(path)
    output = os.path.join(directory, "evidence.jsonl")
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    with flagsaver.flagsaver(
        model_path=path,
        evidence_weights=["0", "0.5"],
        evidence_train_digits=60,
        evidence_test_digits=40,
        evidence_output=output,
    ):
        presence_evidence.main(["prog"])
    with open(output) as file:
        rows = [json.loads(line) for line in file.read().splitlines()]
    assert [row["evidence_weight"] for row in rows] == [
        "own",
        0.0,
        0.5,
        "single_parent",
    ]
    for row in rows:
        assert np.isfinite(row["bound"])
        assert np.isfinite(row["binary_bound"])
        assert 0.0 <= row["probe_t0"] <= 1.0
        assert 0.0 <= row["present"] <= 4.0
    # At weight 0 every image's presences are the prior's.
    assert rows[1]["presence_information"] == 0.0
    assert rows[3]["present"] == 1.0
    keras.backend.clear_session()
