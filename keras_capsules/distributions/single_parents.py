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
"""

import tensorflow as tf

from keras_capsules.distributions.parent_poses import refine_parent_poses
from keras_capsules.distributions.poses import POSE_DIM


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
    """
    num_parents = model.top_presence_logits.shape[-1]
    alone = tf.eye(num_parents, dtype=templates["pose"].dtype)
    batched = {key: value[:, None] for key, value in templates.items()}
    single = parent_set_scores(model, alone, batched, num_pose_steps)
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
