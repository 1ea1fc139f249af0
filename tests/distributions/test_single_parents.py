"""Single-parent scores: the parent that generated a layer explains it
best; the batched scores equal one parent at a time."""

import numpy as np
import pytest
import tensorflow as tf

from keras_capsules import distributions
from tests.distributions.tiny_decoder import tiny_decoder


def generated_templates(model, parent, pose, batch):
    """Template poses placed exactly where `parent` at `pose` puts them
    (eq. 5's mean), every template present."""
    predictions = distributions.predict_child_poses(
        tf.constant(pose[None, None], tf.float32),
        model.pose_offsets[parent : parent + 1],
    )[:, 0]  # (1, n1, 6)
    poses = tf.repeat(predictions, batch, axis=0)
    return {"presence": tf.ones(poses.shape[:2]), "pose": poses}


def test_the_parent_that_generated_the_templates_explains_them_best():
    decoder = tiny_decoder(0, num_top_capsules=4, num_template_capsules=6)
    model = decoder.generative_model(relaxed=False)
    rng = np.random.default_rng(0)
    for parent in range(4):
        templates = generated_templates(
            model, parent, rng.normal(0.0, 0.2, 6), 2
        )
        single, every = distributions.single_parent_scores(model, templates)
        assert single.shape == (2, 4) and every.shape == (2,)
        np.testing.assert_array_equal(np.argmax(single, axis=1), [parent] * 2)


def test_batched_scores_equal_one_parent_at_a_time():
    decoder = tiny_decoder(1, num_top_capsules=3, num_template_capsules=5)
    model = decoder.generative_model(relaxed=False)
    rng = np.random.default_rng(1)
    templates = {
        "presence": tf.constant(rng.integers(0, 2, (4, 5)), tf.float32),
        "pose": tf.constant(rng.normal(0.0, 0.3, (4, 5, 6)), tf.float32),
    }
    single, every = distributions.single_parent_scores(
        model, templates, num_pose_steps=2
    )
    for parent in range(3):
        presences = np.zeros((4, 3), np.float32)
        presences[:, parent] = 1.0
        top = {"presence": tf.constant(presences), "pose": tf.zeros((4, 3, 6))}
        top["pose"] = distributions.refine_parent_poses(
            model, top, templates, 2
        )
        expected = model.template_conditional(top).log_prob(
            templates
        ) + model.top_prior().log_prob(top)
        np.testing.assert_allclose(single[:, parent], expected, rtol=1e-5)
    np.testing.assert_allclose(
        every,
        distributions.parent_set_scores(model, tf.ones((4, 3)), templates, 2),
        rtol=1e-6,
    )


def test_a_relaxed_model_is_refused():
    decoder = tiny_decoder(2)
    with pytest.raises(ValueError, match="binary model"):
        distributions.parent_set_scores(
            decoder.generative_model(),
            tf.ones((1, 3)),
            {"presence": tf.ones((1, 5)), "pose": tf.zeros((1, 5, 6))},
        )
