"""A top-layer posterior under which exactly one parent is present.

The mean-field posterior of the paper (`CapsulePosterior`) lets every top
capsule be present or not on its own. If the top capsules are to stand
for objects, and an image shows one object, the posterior can instead
say which single parent is present and where:

```none
q(t^0 = e_i) = exp(log_probabilities_i)          sum_i q(t^0 = e_i) = 1
q(A^0 | t^0 = e_i) = delta(parent_poses_i)       poses of parent i alone
```

`single_parent_choices` gives the scores whose softmax is the exact
posterior within this family, and `single_parent_elbo` the bound.
"""

import tensorflow as tf

from keras_capsules.distributions import presences as presence_lib

# The relaxed presence logit of a certainly present (absent) parent in
# `mode`: sigmoid(30) = 1 - 1e-13.
CERTAIN_RELAXED_LOGIT = 30.0


class SingleParentPosterior(presence_lib.KeyedByTemperature):
    """`q(t^0, A^0)` over the events with one top capsule present.

    Args:
        log_probabilities: `(batch, n0)` `log q(t^0 = e_i)`; each row's
            `logsumexp` is 0.
        parent_poses: `(batch, n0, n0, 6)` the top poses when parent `i`
            alone is present (row `i`).
        temperature: the Concrete temperature of the model's events
            (`mode` writes presences as relaxed logits), or None.

    `presence_logits` and `pose_means` summarise it as a mean-field
    posterior would be read (`GenerativeCapsuleAutoencoder.latents`,
    `distributions.layer_information`): the logits of the marginals
    `q(t^0_i = 1) = q(t^0 = e_i)`, and each parent's pose when present.

    Examples:

        >>> posterior = SingleParentPosterior(
        ...     np.log(np.full((2, 3), 1 / 3, "float32")),
        ...     np.zeros((2, 3, 3, 6), "float32"), temperature=None)
        >>> marginals = ops.sigmoid(posterior.presence_logits)  # q(t_i = 1)
        >>> np.round(ops.convert_to_numpy(marginals), 4)
        array([[0.3333, 0.3333, 0.3333],
           [0.3333, 0.3333, 0.3333]], dtype=float32)
    """

    def __init__(self, log_probabilities, parent_poses, temperature):
        self.log_probabilities = log_probabilities
        self.parent_poses = parent_poses
        self.temperature = temperature
        self.pose_scales = None

    @property
    def num_parents(self):
        return self.log_probabilities.shape[-1]

    @property
    def presence_logits(self):
        """`(batch, n0)` `logit q(t^0_i = 1)`: `log q_i` minus the
        `logsumexp` of the other parents' (exact where `q_i` rounds to
        1; finite, `log q` taken no lower than `LOG_ZERO`)."""
        log_q = tf.maximum(
            self.log_probabilities,
            tf.constant(presence_lib.LOG_ZERO, self.log_probabilities.dtype),
        )
        others = tf.where(
            tf.eye(self.num_parents, dtype=tf.bool),
            tf.constant(presence_lib.LOG_ZERO, log_q.dtype),
            log_q[:, None, :],
        )
        return log_q - tf.reduce_logsumexp(others, -1)

    @property
    def pose_means(self):
        """`(batch, n0, 6)`: parent `i`'s pose when it is the one present."""
        alone = tf.eye(self.num_parents, dtype=self.parent_poses.dtype)
        return tf.reduce_sum(alone[:, :, None] * self.parent_poses, 1)

    def mode(self):
        """The most probable event: its one parent present, the others
        absent (relaxed: logits `+-CERTAIN_RELAXED_LOGIT`), with that
        parent's poses."""
        best = tf.argmax(self.log_probabilities, -1)
        chosen = tf.one_hot(
            best, self.num_parents, dtype=self.parent_poses.dtype
        )
        if self.temperature is not None:
            chosen = CERTAIN_RELAXED_LOGIT * (2.0 * chosen - 1.0)
        return {
            self.presence_key: chosen,
            "pose": tf.gather(self.parent_poses, best, batch_dims=1),
        }
