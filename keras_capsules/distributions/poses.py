"""Affine capsule poses (Smith et al., 2020, section 2.1).

A pose `A` is the deviation of a 2-D affine transformation from the
identity, stored as the six free entries of the top two rows of its 3x3
homogeneous matrix, row by row:

```none
I + A = [[1 + a0,     a1, a2],      a2, a5: translation
         [    a3, 1 + a4, a5],      in image units ([-1, 1] spans
         [     0,      0,  1]]      the image)
```

The identity is added, as the paper does, so that poses can be Normal
variables centred at zero. A part offset `M_ij` is stored the same way
(`M_ij = I + m_ij`), and eq. 5 composes the transformations:
the child's transformation is predicted as `(I + A_i) M_ij`, so the
predicted pose deviation is `(I + A_i)(I + m_ij) - I`.
"""

import tensorflow as tf

POSE_DIM = 6


def affine_matrices(poses):
    """`(..., 6)` pose deviations -> `(..., 3, 3)` matrices `I + A`.

    Examples:

        >>> ops.convert_to_numpy(affine_matrices(np.zeros((1, 6),
        ...                      "float32")))[0]
        array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]], dtype=float32)
    """
    poses = tf.convert_to_tensor(poses)
    rows = tf.reshape(poses, tf.concat([tf.shape(poses)[:-1], [2, 3]], 0))
    bottom = tf.zeros_like(rows[..., :1, :])
    return tf.concat([rows, bottom], axis=-2) + tf.eye(3, dtype=poses.dtype)


def pose_deviations(matrices):
    """`(..., 3, 3)` affine matrices -> `(..., 6)` deviations `M - I`.

    Examples:

        >>> deviations = np.arange(6, dtype="float32")[None] / 10
        >>> np.allclose(pose_deviations(affine_matrices(deviations)),
        ...             deviations)
        True
    """
    top = matrices[..., :2, :] - tf.eye(2, 3, dtype=matrices.dtype)
    return tf.reshape(top, tf.concat([tf.shape(top)[:-2], [POSE_DIM]], 0))


def predict_child_poses(parent_poses, offsets):
    """Child pose deviations predicted by each parent (eq. 5).

    Args:
        parent_poses: `(..., n_p, 6)` parent pose deviations `A_i`.
        offsets: `(n_p, n_c, 6)` part offsets `m_ij` (`M_ij = I + m_ij`).

    Returns:
        `(..., n_p, n_c, 6)`: `(I + A_i)(I + m_ij) - I`.

    Examples:

        >>> children = predict_child_poses(np.zeros((4, 2, 6), "float32"),
        ...                                np.ones((2, 3, 6), "float32"))
        >>> tuple(children.shape)  # a parent at 0 predicts the offsets
        (4, 2, 3, 6)
    """
    parents = affine_matrices(parent_poses)  # (..., i, 3, 3)
    parts = affine_matrices(offsets)  # (i, j, 3, 3)
    return pose_deviations(tf.einsum("...ipq,ijqr->...ijpr", parents, parts))
