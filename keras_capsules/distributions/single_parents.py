"""Whether one top-layer capsule can stand for a whole image: the joint
density of the template layer when a single parent is present, its pose
computed (Smith et al., 2020, eqs. 1-6 and 9).

If the top capsules are objects (one per digit class, say), each image
is best explained by the one parent of its class, and which parent that
is tells the class. For a binary (unrelaxed) model and each parent `i`:

```none
t^0 = e_i                     only parent i present
A^0 = EM steps from 0         `refine_parent_poses`
score_i = log p(t^1, A^1 | t^0, A^0) + log p(t^0, A^0)
```

and, for comparison, the same with every parent present. A model whose
single best parent is the same for every image, or that explains images
far better with many parents present, uses its parents as parts of one
arrangement rather than as objects.

`single_parent_choices` computes the same scores for the relaxed model the
bound trains (binary top presences, the template layer as drawn), from
given starting poses; they are the log joints of the posterior over which
single parent is present (`SingleParentPosterior`). `balanced_assignments`
turns a batch's scores into a posterior that gives every parent an equal
share of the batch.
"""

import tensorflow as tf

from keras_capsules.distributions.capsule_prior import CapsulePrior
from keras_capsules.distributions.parent_poses import (
    refine_parent_poses,
    refine_parent_poses_given,
)
from keras_capsules.distributions.poses import POSE_DIM

# Sinkhorn-Knopp iterations of `balanced_assignments`.
BALANCING_ITERATIONS = 10


def parent_set_scores(model, presences, templates, num_pose_steps=3):
    """`log p(t^1, A^1 | t^0, A^0) + log p(t^0, A^0)` for given binary top
    presences, the top poses computed by `num_pose_steps` EM steps from 0.

    Args:
        model: a binary `GenerativeCapsuleModel` (`temperature` None).
        presences: `(..., n0)` binary top presences; their leading shape
            broadcasts against the templates' batch shape.
        templates: a binary template-layer event, `presence` `(batch, n1)`
            and `pose` `(batch, n1, 6)`.
        num_pose_steps: int >= 1.

    Returns:
        `(...)` scores, in nats.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> scores = parent_set_scores(model, np.ones((4, 2), "float32"),
        ...                            templates)
        >>> tuple(scores.shape)
        (4,)
    """
    if model.temperature is not None:
        raise ValueError(
            "`parent_set_scores` expects a binary model "
            "(`generative_model(relaxed=False)`). Received one with "
            f"temperature {model.temperature!r}."
        )
    presences = tf.convert_to_tensor(presences, templates["pose"].dtype)
    top = {
        "presence": presences,
        "pose": tf.zeros(
            tf.concat([tf.shape(presences), [POSE_DIM]], 0), presences.dtype
        ),
    }
    top["pose"] = refine_parent_poses(model, top, templates, num_pose_steps)
    return model.template_conditional(top).log_prob(
        templates
    ) + model.top_prior().log_prob(top)


def single_parent_scores(model, templates, num_pose_steps=3):
    """Scores with each parent alone present and with all present.

    Args:
        model: a binary `GenerativeCapsuleModel`.
        templates: a binary template-layer event for a batch of images.
        num_pose_steps: EM steps on the top poses.

    Returns:
        `(single, every)`: `(batch, n0)` scores with only parent `i`
        present, and `(batch,)` scores with every parent present.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> single, every = single_parent_scores(model, templates)
        >>> tuple(single.shape), tuple(every.shape)
        ((4, 2), (4,))
    """
    num_parents = model.top_presence_logits.shape[-1]
    dtype = templates["pose"].dtype
    batch = tf.shape(templates["pose"])[0]
    single, _ = single_parent_choices(
        model,
        tf.zeros(tf.stack([batch, num_parents, POSE_DIM]), dtype),
        templates,
        num_pose_steps,
    )
    every = parent_set_scores(
        model,
        tf.ones(
            tf.stack([tf.shape(templates["pose"])[0], num_parents]),
            templates["pose"].dtype,
        ),
        templates,
        num_pose_steps,
    )
    return single, every


def single_parent_choices(model, start_poses, templates, num_pose_steps):
    """The log joint of each parent alone present, its pose computed.

    For each parent `i` (Smith et al., eqs. 1-6, top presences binary):

    ```none
    t^0 = e_i                       only parent i present
    A^0 = num_pose_steps EM steps   `refine_parent_poses_given`, from
                                    `start_poses` (parent i's row; the
                                    absent parents' poses at 0)
    score_i = log p(t^1, A^1 | e_i, A^0) + log p(t^0 = e_i) + log N(A^0; 0, I)
    ```

    Args:
        model: a `GenerativeCapsuleModel`, relaxed or binary (the
            template layer's events as it reads them).
        start_poses: `(batch, n0, 6)` top poses to start from.
        templates: a template-layer event of the batch, `(batch, n1)`
            presences and `(batch, n1, 6)` poses.
        num_pose_steps: int >= 0; 0 keeps parent `i`'s starting pose.

    Returns:
        `(scores, poses)`: `(batch, n0)` scores in nats, and
        `(batch, n0, n0, 6)` the top poses with parent `i` alone present
        (row `i`; the other parents' poses there are 0).

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> start = np.zeros((4, 2, 6), "float32")  # top poses
        >>> scores, poses = single_parent_choices(model, start, templates, 2)
        >>> tuple(scores.shape), tuple(poses.shape)
        ((4, 2), (4, 2, 2, 6))
    """
    alone = tf.eye(start_poses.shape[-2], dtype=start_poses.dtype)
    poses = alone[..., None] * start_poses[:, None]  # (batch, i, n0, 6)
    presences = _alone(poses)
    if num_pose_steps:
        poses = refine_parent_poses_given(
            model, presences, poses, _per_parent(templates), num_pose_steps
        )
    log_likelihoods, log_priors = single_parent_terms(model, poses, templates)
    return log_likelihoods + log_priors, poses


def single_parent_terms(model, parent_poses, templates):
    """`(log_likelihoods, log_priors)`, `(batch, n0)` each: with parent
    `i` alone present at poses `parent_poses[:, i]` (`(batch, n0, n0,
    6)`), `log p(t^1, A^1 | e_i, A^0)` of the template-layer event
    `templates` and `log p(t^0 = e_i) + log N(A^0; 0, I)`.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> likelihoods, priors = single_parent_terms(
        ...     model, np.zeros((4, 2, 2, 6), "float32"), templates)
        >>> tuple(likelihoods.shape), tuple(priors.shape)
        ((4, 2), (4, 2))
    """
    presences = _alone(parent_poses)
    prior = CapsulePrior(model.top_presence_logits, POSE_DIM)
    log_likelihoods = model.template_conditional_given(
        presences, parent_poses
    ).log_prob(_per_parent(templates))
    log_priors = prior.log_prob({"presence": presences, "pose": parent_poses})
    return log_likelihoods, log_priors


def _alone(parent_poses):
    """`(batch, n0, n0)` presences, row `i` with parent `i` alone present,
    of `(batch, n0, n0, 6)` poses."""
    num_parents = parent_poses.shape[-2]
    return tf.broadcast_to(
        tf.eye(num_parents, dtype=parent_poses.dtype),
        tf.shape(parent_poses)[:-1],
    )


def _per_parent(templates):
    """A template-layer event broadcast against `(batch, n0)` top events."""
    return {key: value[:, None] for key, value in templates.items()}


def balanced_assignments(scores, temperature, num_iterations=None):
    """Log weights `(batch, n0)` of a soft assignment of a batch's images
    to parents, each image's weights summing to 1 and every parent's
    share of the batch nearly equal.

    The assignment closest to `softmax(scores / temperature)` (in KL)
    whose image marginals are uniform and parent marginals equal, by
    Sinkhorn-Knopp iterations in log space, ending on the images' rows
    (Cuturi, 2013; the balancing of SwAV, Caron et al., 2020). Trained on
    its own posterior, a model whose one parent explains a digit best
    soon explains every digit best with it (it is trained on all of
    them); balanced assignments keep each parent trained on its share.

    Args:
        scores: `(batch, n0)` log joints (`single_parent_choices`).
        temperature: float > 0, in nats; large: equal weights, small:
            nearly one parent per image.
        num_iterations: Sinkhorn-Knopp iterations (default
            `BALANCING_ITERATIONS`).

    Returns:
        `(batch, n0)` log weights, every row's `logsumexp` 0.

    Examples:

        >>> scores = np.array([[0.0, -5.0], [0.0, -5.0]], "float32")
        >>> weights = ops.exp(balanced_assignments(scores, temperature=1.0))
        >>> np.round(ops.convert_to_numpy(ops.sum(weights, axis=0)),
        ...          3)  # shares
        array([1., 1.], dtype=float32)
    """
    if not temperature > 0:
        raise ValueError(
            "`balanced_assignments` expects `temperature` > 0 (nats). "
            f"Received: {temperature!r}."
        )
    if num_iterations is None:
        num_iterations = BALANCING_ITERATIONS
    log_weights = scores / temperature
    for _ in range(num_iterations):
        log_weights -= tf.reduce_logsumexp(log_weights, 0, keepdims=True)
        log_weights -= tf.reduce_logsumexp(log_weights, 1, keepdims=True)
    return log_weights
