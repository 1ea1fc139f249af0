"""Parent-pose EM steps against a NumPy least-squares solve written from
eq. 5 and the prior (eq. 2), and their effect on the objective."""

import numpy as np
import tensorflow as tf

from keras_capsules import distributions
from tests.distributions.generative_reference import affine
from tests.distributions.tiny_decoder import tiny_decoder


def reference_step(weights, offsets, child_poses):
    """Per parent, the least-squares fit of vec(P) (the top rows of
    I + A_i) to rows sqrt(w_ij) (P M_ij - C_j) and the prior rows
    (P - I): one stacked linear system in the 6 unknowns, solved by
    np.linalg.lstsq."""
    batch, n_p, n_c = weights.shape
    result = np.zeros((batch, n_p, 6))
    for b in range(batch):
        for i in range(n_p):
            design, target = [np.eye(6)], [np.eye(3)[:2].reshape(-1)]
            for j in range(n_c):
                m = affine(offsets[i, j])
                c = affine(child_poses[b, j])[:2]
                root = np.sqrt(weights[b, i, j])
                # (P M)[a, q] = sum_p P[a, p] M[p, q]: vec(P M) = K vec(P).
                design.append(root * np.kron(np.eye(2), m.T))
                target.append(root * c.reshape(-1))
            solution = np.linalg.lstsq(
                np.concatenate(design), np.concatenate(target), rcond=None
            )[0]
            result[b, i] = solution - np.eye(3)[:2].reshape(-1)
    return result


def test_step_matches_least_squares_at_an_ordinary_point():
    rng = np.random.default_rng(0)
    weights = rng.uniform(0, 50, (3, 4, 5))
    offsets = rng.normal(0, 0.3, (4, 5, 6))
    child_poses = rng.normal(0, 0.3, (3, 5, 6))
    measured = distributions.parent_pose_step(
        tf.constant(weights), tf.constant(offsets), tf.constant(child_poses)
    )
    np.testing.assert_allclose(
        measured, reference_step(weights, offsets, child_poses), atol=1e-9
    )


def test_step_without_children_returns_the_prior_mode():
    rng = np.random.default_rng(1)
    measured = distributions.parent_pose_step(
        tf.zeros((2, 3, 4), tf.float64),
        tf.constant(rng.normal(0, 0.3, (3, 4, 6))),
        tf.constant(rng.normal(0, 0.3, (2, 4, 6))),
    )
    np.testing.assert_array_equal(measured, np.zeros((2, 3, 6)))


def test_step_recovers_the_parent_that_generated_its_children():
    # Children placed exactly at (I + A*) M_j; with weights 1e6 the prior's
    # pull moves the answer by about 1e-6 of A*.
    rng = np.random.default_rng(2)
    parent = rng.normal(0, 0.5, 6)
    offsets = rng.normal(0, 0.3, (1, 5, 6))
    children = np.stack(
        [
            (affine(parent) @ affine(offsets[0, j]) - np.eye(3))[:2].ravel()
            for j in range(5)
        ]
    )[None]
    measured = distributions.parent_pose_step(
        tf.fill((1, 1, 5), tf.constant(1e6, tf.float64)),
        tf.constant(offsets),
        tf.constant(children),
    )
    np.testing.assert_allclose(measured[0, 0], parent, atol=1e-5)


def objective(model, top, templates):
    """log p(t1, A1 | t0, A0) + log N(A0; 0, I) per image."""
    return model.template_conditional(top).log_prob(templates) - tf.reduce_sum(
        0.5 * tf.square(top["pose"]), [-2, -1]
    )


def decoder_and_layers(seed, **options):
    """A tiny decoder (`options` to it) and random top and template events."""
    decoder = tiny_decoder(seed, **options)
    rng = np.random.default_rng(seed)
    top = {
        "presence_logit": tf.constant(rng.normal(2, 2, (6, 3)), tf.float32),
        "pose": tf.zeros((6, 3, 6)),
    }
    templates = {
        # Children surely on: the on-pose stands for eq. 5 exactly, and
        # each step is an exact EM step.
        "presence_logit": tf.fill((6, 5), 12.0),
        "pose": tf.constant(rng.normal(0, 0.3, (6, 5, 6)), tf.float32),
    }
    return decoder, top, templates


def test_refinement_never_lowers_the_objective_when_children_are_on():
    # Children within reach of the on-pose.
    decoder, top, templates = decoder_and_layers(3, min_pose_scale=0.3)
    model = decoder.generative_model()
    values = [objective(model, top, templates)]
    poses = top["pose"]
    for _ in range(4):
        poses = distributions.refine_parent_poses(
            model, {**top, "pose": poses}, templates, 1
        )
        values.append(objective(model, {**top, "pose": poses}, templates))
    values = np.stack(values)  # (steps + 1, batch)
    assert np.all(np.diff(values, axis=0) > -1e-3), values
    assert np.mean(values[-1] - values[0]) > 1.0, values


def test_refinement_gives_finite_gradients_to_generative_parameters():
    decoder, top, templates = decoder_and_layers(4)
    with tf.GradientTape() as tape:
        model = decoder.generative_model()
        poses = distributions.refine_parent_poses(model, top, templates, 3)
        value = tf.reduce_sum(
            objective(model, {**top, "pose": poses}, templates)
        )
    gradients = tape.gradient(value, decoder.trainable_variables)
    used = [g for g in gradients if g is not None]
    assert len(used) >= 4
    for gradient in used:
        assert np.all(np.isfinite(tf.convert_to_tensor(gradient)))
