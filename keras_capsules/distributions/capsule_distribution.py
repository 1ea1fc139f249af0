"""The event structure shared by distributions over a layer of capsules."""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import presences

tfd = tfp.distributions


def as_float_tensor(value):
    """A tensor of `value`, keeping float64 input float64 (float32 else)."""
    tensor = tf.convert_to_tensor(value)
    return tensor if tensor.dtype.is_floating else tf.cast(tensor, tf.float32)


class CapsuleLayerDistribution(tfd.Distribution):
    """Base of distributions over one layer of `n` capsules `(t, A)`.

    Events are dicts:

    ```none
    key                               shape          meaning
    "presence"        (binary)        (n,)           t in {0, 1}
    "presence_logit"  (relaxed)       (n,)           y, t = sigmoid(y)
    "pose"                            (n, pose_dim)  A
    ```

    Subclasses set `_num_capsules`, `_pose_dim` and `_temperature` and
    implement `_batch_shape_tensor`, `_batch_shape`, `_log_prob` and
    `_sample_n`.

    Examples:

        >>> from keras_capsules.distributions import CapsulePrior
        >>> prior = CapsulePrior(np.zeros(3, "float32"),
        ...                      pose_dim=6)  # a subclass
        >>> isinstance(prior, CapsuleLayerDistribution)
        True
    """

    def __init__(self, temperature, parameters, name, dtype=tf.float32):
        self._temperature = temperature
        super().__init__(
            dtype={presences.presence_key(temperature): dtype, "pose": dtype},
            reparameterization_type=tfd.NOT_REPARAMETERIZED,
            validate_args=False,
            allow_nan_stats=False,
            parameters=parameters,
            name=name,
        )

    @property
    def temperature(self):
        """Concrete temperature, or None for binary presences."""
        return self._temperature

    @property
    def presence_key(self):
        """`"presence"`, or `"presence_logit"` for relaxed presences."""
        return presences.presence_key(self._temperature)

    def _event_shape(self):
        return {
            self.presence_key: tf.TensorShape([self._num_capsules]),
            "pose": tf.TensorShape([self._num_capsules, self._pose_dim]),
        }

    def _event_shape_tensor(self):
        return {
            self.presence_key: tf.constant([self._num_capsules]),
            "pose": tf.constant([self._num_capsules, self._pose_dim]),
        }

    def presences(self, value):
        """The presences `t` in [0, 1] of an event (binary or relaxed)."""
        return presences.presence_values(
            value[self.presence_key], self._temperature
        )
