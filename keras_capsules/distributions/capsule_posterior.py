"""The variational posterior over one capsule layer (Smith et al., 2.3)."""

import tensorflow as tf
import tensorflow_probability as tfp

from keras_capsules.distributions import presences as presence_lib

tfd = tfp.distributions


class CapsulePosterior(presence_lib.KeyedByTemperature):
    """Mean-field `q(t, A)` of one layer: relaxed presences, delta or
    Gaussian poses.

    ```none
    q(y_j) = Logistic(presence_logits_j / T, 1 / T)   (relaxed t_j)
    q(A_j) = delta(pose_means_j)                       pose_scales None
           = N(pose_means_j, pose_scales_j^2 I)        otherwise
    ```

    With delta poses the bound is the paper's "partially variational"
    one: `log q(A)` is left out, and the poses are MAP estimates.

    Args:
        presence_logits: `(batch, n)` logits of `q(t_j = 1)`.
        pose_means: `(batch, n, pose_dim)`.
        pose_scales: None (delta poses) or `(batch, n, pose_dim)` > 0.
        temperature: Concrete temperature `T`.

    Examples:

        >>> posterior = CapsulePosterior(
        ...     np.zeros((2, 3), "float32"), np.ones((2, 3, 6),
        ...              "float32"), None,
        ...     temperature=1.0)
        >>> event = posterior.sample(seed=(0, 1))
        >>> tuple(event["presence_logit"].shape), tuple(event["pose"].shape)
        ((2, 3), (2, 3, 6))
        >>> float(ops.max(posterior.mode()["pose"]))  # delta poses
        1.0
    """

    def __init__(self, presence_logits, pose_means, pose_scales, temperature):
        self.presence_logits = presence_logits
        self.pose_means = pose_means
        self.pose_scales = pose_scales
        self.temperature = temperature

    def sample(self, seed, rows=None):
        """A reparameterised draw, as an event dict of the layer.

        `rows`: optional `(offset, total)`: these parameters are rows
        `offset` to `offset + batch` of a batch of `total` (a replica's
        share, `recipes.gradient_step.replica_rows`); the noise is then
        drawn for all `total` rows and this share's rows kept, so that
        replicas together draw what one process draws for the whole
        batch.
        """
        if rows is not None:
            return self._sample_rows(seed, *rows)
        presence_seed, pose_seed = tfp.random.split_seed(seed, 2)
        presence = presence_lib.sample_presences(
            self.presence_logits, self.temperature, presence_seed
        )
        poses = self.pose_means
        if self.pose_scales is not None:
            noise = tf.random.stateless_normal(
                tf.shape(poses), seed=pose_seed, dtype=poses.dtype
            )
            poses = poses + self.pose_scales * noise
        return {self.presence_key: presence, "pose": poses}

    def _sample_rows(self, seed, offset, total):
        batch = tf.shape(self.presence_logits)[0]

        def placed(tensor):
            if tensor is None:
                return None
            padding = [[offset, total - offset - batch]] + [[0, 0]] * (
                len(tensor.shape) - 1
            )
            return tf.pad(tensor, padding)

        whole_batch = CapsulePosterior(
            placed(self.presence_logits),
            placed(self.pose_means),
            placed(self.pose_scales),
            self.temperature,
        )
        return tf.nest.map_structure(
            lambda draw: draw[offset : offset + batch],
            whole_batch.sample(seed),
        )

    def mode(self):
        """Presences at their most probable value, poses at their means."""
        logits = self.presence_logits
        if self.temperature is None:
            presence = tf.cast(logits > 0, logits.dtype)
        else:  # The mode of Logistic(logits / T, 1 / T).
            presence = logits / self.temperature
        return {self.presence_key: presence, "pose": self.pose_means}

    def log_prob(self, value):
        """`log q(t, A)` per example, `(batch,)` (delta poses: `log q(t)`)."""
        log_q = tf.reduce_sum(
            presence_lib.presence_log_prob(
                value[self.presence_key],
                self.presence_logits,
                self.temperature,
            ),
            -1,
        )
        if self.pose_scales is not None:
            log_q += tf.reduce_sum(
                tfd.Normal(self.pose_means, self.pose_scales).log_prob(
                    value["pose"]
                ),
                [-2, -1],
            )
        return log_q
