"""The top layer of the generative capsule model (Smith et al., eqs. 1-2)."""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import presences
from keras_capsules.distributions.capsule_distribution import (
    CapsuleLayerDistribution,
    as_float_tensor,
)

tfd = tfp.distributions


class CapsulePrior(CapsuleLayerDistribution):
    """Independent top-layer capsules: `t_i ~ Bern(p_i)`, `A_i ~ N(0, I)`.

    ```none
    paper      code                                   shape
    p          sigmoid(presence_logits)               (..., n)
    t^0_i      event["presence"] (or its relaxed      (..., n)
               logit, event["presence_logit"])
    A^0_i      event["pose"]                          (..., n, pose_dim)
    ```

    Args:
        presence_logits: `(..., n)` logits of the presence probabilities;
            the leading axes are the batch shape.
        pose_dim: int, size of a pose (6 for 2-D affine poses).
        temperature: None for Bernoulli presences, or the temperature of
            their Concrete relaxation (events then hold presence logits).

    Batch shape `presence_logits.shape[:-1]`; event shape
    `{"presence": (n,), "pose": (n, pose_dim)}`.

    Examples:

        >>> prior = CapsulePrior(np.zeros(3, "float32"), pose_dim=6)
        >>> event = prior.sample(2, seed=(0, 1))
        >>> tuple(event["presence"].shape), tuple(event["pose"].shape)
        ((2, 3), (2, 3, 6))
        >>> tuple(prior.log_prob(event).shape)
        (2,)
    """

    def __init__(
        self, presence_logits, pose_dim, temperature=None, name="CapsulePrior"
    ):
        parameters = dict(locals())
        self._presence_logits = as_float_tensor(presence_logits)
        self._num_capsules = self._presence_logits.shape[-1]
        self._pose_dim = pose_dim
        super().__init__(
            temperature, parameters, name, self._presence_logits.dtype
        )

    @property
    def presence_logits(self):
        return self._presence_logits

    def _batch_shape(self):
        return self._presence_logits.shape[:-1]

    def _batch_shape_tensor(self):
        return tf.shape(self._presence_logits)[:-1]

    def _log_prob(self, value):
        presence_terms = presences.presence_log_prob(
            value[self.presence_key], self._presence_logits, self.temperature
        )
        dtype = self._presence_logits.dtype
        pose_terms = tfd.Normal(
            tf.constant(0.0, dtype), tf.constant(1.0, dtype)
        ).log_prob(value["pose"])
        return tf.reduce_sum(presence_terms, -1) + tf.reduce_sum(
            pose_terms, [-2, -1]
        )

    def _sample_n(self, n, seed=None):
        presence_seed, pose_seed = tfp.random.split_seed(seed, 2)
        shape = tf.concat([[n], tf.shape(self._presence_logits)], 0)
        logits = tf.broadcast_to(self._presence_logits, shape)
        return {
            self.presence_key: presences.sample_presences(
                logits, self.temperature, presence_seed
            ),
            "pose": tf.random.stateless_normal(
                tf.concat([shape, [self._pose_dim]], 0),
                seed=pose_seed,
                dtype=self.dtype["pose"],
            ),
        }
