"""Parent poses that best explain their children: EM steps toward the MAP
of `A^(k-1)` under eq. 5 and the prior of eq. 2.

Given the children's poses and the parents' presences, eq. 5 makes each
child's pose a Gaussian whose mean, `(I + A_i) M_ij`, is linear in the
parent's affine matrix. With the selections' posterior held fixed (the
E-step), the parent poses that maximise

```none
E_s[log p(A^k | s, t^(k-1), A^(k-1))] + log N(A^(k-1); 0, I)
```

solve, for each parent and each of the two free rows `p` of `I + A_i`,
a 3x3 linear system (the M-step):

```none
w_ij = p(s_j = i, A_j from eq. 5 | t, A) / c_ij^2
p (sum_j w_ij M_ij M_ij^T + I) = sum_j w_ij c_j M_ij^T + e
```

with `c_j` the same row of the child's matrix `I + A_j` and `e` that row
of the identity (the prior pulls `A_i` to 0). Parts vote for the whole's
pose, weighted by how surely they belong to it, as in capsule routing.

The weights come from `CapsuleConditional.on_pose_posterior` at the
current parent poses, so each step is an exact EM step and never lowers
the objective. Whatever parent poses it returns, the bound stays a bound:
with delta pose posteriors they are the variational parameters, computed
rather than predicted.
"""

import tensorflow as tf

from keras_capsules.distributions import poses as pose_lib
from keras_capsules.distributions import presences as presence_lib


def parent_pose_step(selection_weights, pose_offsets, child_poses):
    """The M-step: parent poses maximising the weighted fit plus prior.

    Args:
        selection_weights: `(..., n_p, n_c)` weights `w_ij >= 0`
            (on-pose posterior of eq. 5 / c_ij^2).
        pose_offsets: `(n_p, n_c, 6)` part offsets `m_ij`
            (`M_ij = I + m_ij`).
        child_poses: `(..., n_c, 6)` child pose deviations `A_j`.

    Returns:
        `(..., n_p, 6)` parent pose deviations `A_i`.

    Examples:

        >>> poses = parent_pose_step(np.ones((4, 2, 3), "float32"),
        ...                          np.zeros((2, 3, 6), "float32"),
        ...                          np.zeros((4, 3, 6), "float32"))
        >>> tuple(poses.shape), float(ops.max(ops.abs(poses)))  # children at 0
        ((4, 2, 6), 0.0)
    """
    offsets = pose_lib.affine_matrices(pose_offsets)  # (i, j, 3, 3)
    # The two free rows of each child's matrix: (..., j, 2, 3).
    children = pose_lib.affine_matrices(child_poses)[..., :2, :]
    gram = tf.einsum(
        "...ij,ijpq,ijrq->...ipr", selection_weights, offsets, offsets
    )
    gram += tf.eye(3, dtype=gram.dtype)
    moments = tf.einsum(
        "...ij,...jap,ijqp->...iaq", selection_weights, children, offsets
    )
    moments += tf.eye(2, 3, dtype=moments.dtype)
    # rows = moments gram^-1; gram is symmetric positive definite.
    rows = tf.linalg.matrix_transpose(
        tf.linalg.solve(gram, tf.linalg.matrix_transpose(moments))
    )
    deviations = rows - tf.eye(2, 3, dtype=rows.dtype)
    return tf.reshape(
        deviations,
        tf.concat([tf.shape(deviations)[:-2], [pose_lib.POSE_DIM]], 0),
    )


def refine_parent_poses(model, top, templates, num_steps):
    """`num_steps` EM steps on the top layer's poses, from `top["pose"]`.

    Args:
        model: a `GenerativeCapsuleModel`.
        top: a top-layer event (presences or their relaxed logits, and
            the poses to start from).
        templates: a template-layer event (the children).
        num_steps: int >= 1.

    Returns:
        `(batch, n0, 6)` refined top-layer poses.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> tuple(refine_parent_poses(model, top, templates, num_steps=2).shape)
        (4, 2, 6)
    """
    return refine_parent_poses_given(
        model,
        presence_lib.presence_values(
            top[model.presence_key], model.temperature
        ),
        top["pose"],
        templates,
        num_steps,
    )


def refine_parent_poses_given(
    model, presences, start_poses, templates, num_steps
):
    """`refine_parent_poses` for top presences given as values in [0, 1]
    (`model.template_conditional_given`): `(..., n0)` presences and
    `(..., n0, 6)` poses to start from, whose leading axes broadcast
    against the templates' batch shape. A parent of presence 0 gets
    weight 0 from every child, so its pose goes to the prior's mode, 0.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> present, start = np.ones((4, 2)), np.zeros((4, 2, 6))
        >>> poses = refine_parent_poses_given(
        ...     model, present.astype("float32"), start.astype("float32"),
        ...     templates, num_steps=2)
        >>> tuple(poses.shape)
        (4, 2, 6)
    """
    parent_poses = start_poses
    for _ in range(num_steps):
        conditional = model.template_conditional_given(presences, parent_poses)
        # Row 0, the dummy parent, has no pose.
        responsibilities = conditional.on_pose_posterior(templates)[..., 1:, :]
        weights = responsibilities / tf.square(model.pose_scales)
        parent_poses = parent_pose_step(
            weights, model.pose_offsets, templates["pose"]
        )
    return parent_poses
