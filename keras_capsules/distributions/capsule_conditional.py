"""A child capsule layer given its parents, selections summed out.

Smith, Schut, Gal and van der Wilk (2020), eqs. 3-6 and 9.
"""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import presences
from keras_capsules.distributions.capsule_distribution import (
    CapsuleLayerDistribution,
    as_float_tensor,
)

tfd = tfp.distributions


class CapsuleConditional(CapsuleLayerDistribution):
    """`p(t^k, A^k | t^(k-1), A^(k-1))` with every selection `s_j` summed out.

    Each child `j` picks one parent `s_j` among the `n_p` parents and an
    always-on dummy (clutter) parent, index 0 (eq. 3), then its presence
    (eq. 4) and pose (eqs. 5-6) given that parent. Given the parents, the
    selections are independent across children, so (eq. 9)

    ```none
    p(t_j, A_j) = sum_{i=0..n_p} pi_ij p(t_j | s_j=i) p(A_j | t_j, s_j=i)
    pi_ij       = rho_ij t_i / sum_i' rho_i'j t_i'      (t_0 = 1)
    t_j | s_j=i ~ Bern(gamma_ij)
    A_j | s_j=i, t_j=1 ~ N(mu_ij, c_ij^2 I),   mu_0j = 0, c_0j = clutter
    A_j | t_j=0        ~ N(0, lambda_off^2 I)
    ```

    which costs `O(n_p n_c)`, not `(n_p + 1)^n_c`.

    ```none
    paper             code                       shape
    t^(k-1)_i         parent_presences           (..., n_p)
    (I+A_i) M_ij - I  pose_predictions (mu_ij)   (..., n_p, n_c, pose_dim)
    rho_ij, rho_0j    exp(log_affinities),       (n_p, n_c), scalar or (n_c,)
                      exp(clutter_log_affinity)
    gamma_ij          sigmoid(presence_logits)   (n_p + 1, n_c), row 0: dummy
    c_ij, c_0j        pose_scales,               (n_p, n_c), scalar or (n_c,)
                      clutter_pose_scale
    lambda_off        off_pose_scale             scalar
    ```

    Scales are standard deviations. With a `temperature`, presences are
    Concrete-relaxed (events hold their logits, see `presences`); the pose
    density of a relaxed child is then the mixture
    `t N(mu_ij, c_ij^2) + (1 - t) N(0, lambda_off^2)`: a proper density for
    every `t` that is eq. 5 at `t = 1` and eq. 6 at `t = 0` (the paper does
    not write out its relaxation of eqs. 5-6). Parents may be relaxed
    (presences in (0, 1)) either way.

    Batch shape: the broadcast of `parent_presences.shape[:-1]` and
    `pose_predictions.shape[:-3]`. Event shape
    `{"presence": (n_c,), "pose": (n_c, pose_dim)}`.

    Examples:

        >>> from keras_capsules.layers import GenerativeCapsuleDecoder
        >>> decoder = GenerativeCapsuleDecoder(2, 3)  # 2 top, 3 templates
        >>> model = decoder.generative_model(relaxed=False)  # binary presences
        >>> top, templates, _ = model.sample(4, seed=(0, 1)).values()
        >>> conditional = model.template_conditional(top)  # this class
        >>> tuple(conditional.log_prob(templates).shape)
        (4,)
        >>> tuple(conditional.selection_posterior(templates).shape)  # n_p + 1
        (4, 3, 3)
    """

    def __init__(
        self,
        parent_presences,
        pose_predictions,
        log_affinities,
        presence_logits,
        pose_scales,
        clutter_log_affinity,
        clutter_pose_scale,
        off_pose_scale,
        temperature=None,
        name="CapsuleConditional",
    ):
        parameters = dict(locals())
        self._parent_presences = as_float_tensor(parent_presences)
        dtype = self._parent_presences.dtype
        self._pose_predictions = tf.convert_to_tensor(pose_predictions, dtype)
        self._log_affinities = tf.convert_to_tensor(log_affinities, dtype)
        self._presence_logits = tf.convert_to_tensor(presence_logits, dtype)
        self._pose_scales = tf.convert_to_tensor(pose_scales, dtype)
        self._clutter_log_affinity = tf.convert_to_tensor(
            clutter_log_affinity, dtype
        )
        self._clutter_pose_scale = tf.convert_to_tensor(
            clutter_pose_scale, dtype
        )
        self._off_pose_scale = tf.convert_to_tensor(off_pose_scale, dtype)
        self._num_capsules = self._pose_predictions.shape[-2]
        self._pose_dim = self._pose_predictions.shape[-1]
        super().__init__(temperature, parameters, name, dtype)

    def _batch_shape(self):
        return tf.broadcast_static_shape(
            self._parent_presences.shape[:-1],
            self._pose_predictions.shape[:-3],
        )

    def _batch_shape_tensor(self):
        return tf.broadcast_dynamic_shape(
            tf.shape(self._parent_presences)[:-1],
            tf.shape(self._pose_predictions)[:-3],
        )

    def selection_log_probs(self):
        """`log pi_ij`, eq. 3: `(..., n_p + 1, n_c)`, row 0 the dummy."""
        log_weights = (
            presences.log_presences(self._parent_presences)[..., :, None]
            + self._log_affinities
        )  # (..., i, j)
        clutter = tf.broadcast_to(
            self._clutter_log_affinity,
            tf.concat([tf.shape(log_weights)[:-2], [1, self._num_capsules]], 0),
        )
        log_weights = tf.concat([clutter, log_weights], axis=-2)
        return tf.nn.log_softmax(log_weights, axis=-2)

    def _component_means_and_scales(self):
        """`mu_ij` and `c_ij` with the dummy parent as row 0."""
        predictions = self._pose_predictions  # (..., i, j, pose_dim)
        clutter_mean = tf.zeros_like(predictions[..., :1, :, :])
        means = tf.concat([clutter_mean, predictions], axis=-3)
        clutter_scale = tf.broadcast_to(
            self._clutter_pose_scale, [1, self._num_capsules]
        )
        scales = tf.concat([clutter_scale, self._pose_scales], axis=-2)
        return means, scales

    def _component_terms(self, value):
        """`log p(t_j | s_j = i)` and the log weights of child `j`'s
        on-pose (eq. 5) and off-pose (eq. 6) given `s_j = i`, each
        `(..., n_p + 1, n_c)`: a component's log density is the first
        plus the logsumexp of the other two."""
        presence_value = value[self.presence_key][..., None, :]  # (..., 1, j)
        presence_terms = presences.presence_log_prob(
            presence_value, self._presence_logits, self.temperature
        )
        means, scales = self._component_means_and_scales()
        poses = value["pose"][..., None, :, :]  # (..., 1, j, pose_dim)
        on_terms = tf.reduce_sum(
            tfd.Normal(means, scales[..., None]).log_prob(poses), -1
        )
        off_terms = tf.broadcast_to(
            tf.reduce_sum(
                tfd.Normal(
                    tf.zeros_like(self._off_pose_scale), self._off_pose_scale
                ).log_prob(poses),
                -1,
            ),
            tf.shape(on_terms),
        )
        if self.temperature is None:
            on = presence_value > 0.5
            log_zero = tf.constant(presences.LOG_ZERO, on_terms.dtype)
            on_terms = tf.where(on, on_terms, log_zero)
            off_terms = tf.where(on, log_zero, off_terms)
        else:
            logits = value[self.presence_key][..., None, :]
            on_terms += tf.math.log_sigmoid(logits)
            off_terms += tf.math.log_sigmoid(-logits)
        return presence_terms, on_terms, off_terms

    def component_log_probs(self, value):
        """`log p(t_j, A_j | s_j = i)`: `(..., n_p + 1, n_c)`."""
        presence_terms, on_terms, off_terms = self._component_terms(value)
        return presence_terms + tf.math.reduce_logsumexp(
            tf.stack([on_terms, off_terms]), axis=0
        )

    def on_pose_posterior(self, value):
        """`p(s_j = i, A_j drawn from eq. 5 | t, A)`: `(..., n_p + 1, n_c)`,
        the selection posterior times the probability that the child's
        pose came from its parent's prediction rather than the off-pose
        density (always 1 or 0 for binary presences)."""
        presence_terms, on_terms, off_terms = self._component_terms(value)
        shared = self.selection_log_probs() + presence_terms
        joint_on = shared + on_terms
        joint_off = shared + off_terms
        normaliser = tf.math.reduce_logsumexp(
            tf.stack([joint_on, joint_off]), axis=[0, -2]
        )
        return tf.exp(joint_on - normaliser[..., None, :])

    def _joint_log_probs(self, value):
        return self.selection_log_probs() + self.component_log_probs(value)

    def _log_prob(self, value):
        per_child = tf.math.reduce_logsumexp(
            self._joint_log_probs(value), axis=-2
        )
        return tf.reduce_sum(per_child, axis=-1)

    def selection_posterior(self, value):
        """`p(s_j = i | t, A)` (supplementary D): `(..., n_p + 1, n_c)`.

        Summed over children (`j`), it is the expected number of children
        each parent explains.
        """
        return tf.nn.softmax(self._joint_log_probs(value), axis=-2)

    def _sample_n(self, n, seed=None):
        selection_seed, presence_seed, on_seed, pose_seed = (
            tfp.random.split_seed(seed, 4)
        )
        log_pi = self.selection_log_probs()  # (..., i, j)
        log_pi = tf.broadcast_to(
            log_pi,
            tf.concat([self.batch_shape_tensor(), tf.shape(log_pi)[-2:]], 0),
        )
        # s_j ~ Cat(pi_.j): (n, ..., j) as a one-hot over parents i.
        selections = tfd.Categorical(
            logits=tf.linalg.matrix_transpose(log_pi)
        ).sample(n, seed=selection_seed)
        chosen = tf.linalg.matrix_transpose(
            tf.one_hot(
                selections, tf.shape(log_pi)[-2], dtype=self.dtype["pose"]
            )
        )  # (n, ..., i, j)
        presence_logits = tf.reduce_sum(chosen * self._presence_logits, -2)
        presence = presences.sample_presences(
            presence_logits, self.temperature, presence_seed
        )  # (n, ..., j)
        t = presences.presence_values(presence, self.temperature)
        # Relaxed children use the on-pose with probability t (the mixture).
        on = tf.cast(
            tf.random.stateless_uniform(
                tf.shape(t), seed=on_seed, dtype=t.dtype
            )
            < t,
            t.dtype,
        )
        means, scales = self._component_means_and_scales()
        mean = tf.reduce_sum(chosen[..., None] * means, -3)  # (n, ..., j, d)
        scale = tf.reduce_sum(chosen * scales, -2)  # (n, ..., j)
        mean = on[..., None] * mean
        scale = on * scale + (1.0 - on) * self._off_pose_scale
        noise = tf.random.stateless_normal(
            tf.shape(mean), seed=pose_seed, dtype=mean.dtype
        )
        return {
            self.presence_key: presence,
            "pose": mean + scale[..., None] * noise,
        }
