"""Per-batch sums of capsule regression's EM training (Saul, sections
2.3-2.4): the inputs' class moments, the E-step's eq. 22 numerator and
likelihood, and the classification errors. `DatasetSum` adds them up over
a dataset on every replica."""

import dataclasses

import numpy as np
import tensorflow as tf

from keras_capsules import ops as capsule_ops
from keras_capsules.ops.capsule_regression import posterior_scales
from keras_capsules.ops.labels import valid_class_ids
from keras_capsules.trainers import architectures


@dataclasses.dataclass(frozen=True, eq=False)  # eq=False: hashed by identity
class EMBatchSums:
    """The sums of one batch for `K` models of `m` capsules of size `d`
    over `C` classes.

    Args:
        num_classes: int, `C`.
        architecture: the name of the ensemble (`architectures`).
        membership: `(K, m, C)` which classes each model's capsules
            stand for (`architectures.membership`).
        use_offset: bool: the design rows end with a 1.
    """

    num_classes: int
    architecture: str
    membership: np.ndarray
    use_offset: bool

    @property
    def capsules_per_model(self):
        return self.membership.shape[1]

    def class_moments(self, batch):
        """Per-class counts, sums and Gram matrices of one batch's inputs."""
        x, y = _features_and_labels(batch)
        one_hot = tf.one_hot(
            tf.cast(y, tf.int32), self.num_classes, dtype=tf.float64
        )
        x = tf.cast(x, tf.float64)
        return (
            tf.reduce_sum(one_hot, 0),
            tf.einsum("bc,bp->cp", one_hot, x),
            tf.einsum("bc,bp,bq->cpq", one_hot, x, x),
            self.bad_label_count(y),
        )

    def bad_label_count(self, labels):
        """How many `labels` are not whole numbers in `[0, num_classes)`:
        summed with the statistics (the sums run under XLA, which drops
        assertions) and checked after each pass."""
        whole, in_range = valid_class_ids(labels, self.num_classes)
        return tf.reduce_sum(tf.cast(~(whole & in_range), tf.float64))

    def design(self, x, input_mean):
        z = tf.cast(x, tf.float32) - tf.cast(input_mean, tf.float32)
        if self.use_offset:
            z = tf.concat([z, tf.ones_like(z[:, :1])], axis=1)
        return z

    def _model_outputs(self, x, labels, kernel, input_mean):
        z = self.design(x, input_mean)
        means = tf.einsum("bq,kqmd->bkmd", z, kernel)
        targets, weights = architectures.targets_and_weights(
            self.membership, labels
        )
        return z, means, targets, weights

    def estep(self, batch, kernel, input_mean, thresholds):
        """Sums of one batch: eq. 22's numerator, log-likelihood, errors."""
        x, labels = _features_and_labels(batch)
        z, means, targets, weights = self._model_outputs(
            x, labels, kernel, input_mean
        )
        probabilities = capsule_ops.capsule_regression_probabilities(means)
        target_mask = tf.one_hot(targets, self.capsules_per_model)
        target_probability = tf.reduce_sum(probabilities * target_mask, -1)
        rival = tf.reduce_max(probabilities - 2.0 * target_mask, -1)
        ratio = rival / tf.maximum(target_probability, 1e-30)  # eq. 25
        scales = posterior_scales(means, targets)
        # Eq. 26: well-classified examples keep their prior means.
        scales = tf.where((ratio <= thresholds)[..., None], 1.0, scales)
        # Eq. 22's numerator sum_l E[h_i | x_l, y_l] z_l^T as one matrix
        # product: a three-operand einsum can pick a far slower order.
        posterior = (scales * weights[..., None])[..., None] * means
        flat = tf.reshape(posterior, (tf.shape(posterior)[0], -1))
        numerator = tf.transpose(
            tf.reshape(tf.einsum("bq,bx->qx", z, flat), (-1, *means.shape[1:])),
            (1, 0, 2, 3),
        )  # (K, q, m, d)
        log_likelihood = tf.reduce_sum(
            weights * tf.math.log(tf.maximum(target_probability, 1e-30)), 0
        )
        wrong = tf.cast(
            tf.argmax(probabilities, -1, tf.int32) != targets, tf.float32
        )
        return (
            tf.cast(numerator, tf.float64),
            log_likelihood,
            tf.reduce_sum(weights * wrong, 0),
            tf.reduce_sum(weights, 0),
        )

    def errors(self, batch, kernel, input_mean):
        """Per-model and combined classification errors of one batch."""
        x, labels = _features_and_labels(batch)
        _, means, targets, weights = self._model_outputs(
            x, labels, kernel, input_mean
        )
        probabilities = capsule_ops.capsule_regression_probabilities(means)
        wrong = tf.cast(
            tf.argmax(probabilities, -1, tf.int32) != targets, tf.float32
        )
        predicted = architectures.predict_classes(
            self.architecture, self.membership, probabilities
        )
        combined = tf.cast(
            predicted != tf.cast(labels, predicted.dtype), tf.float32
        )
        return (
            tf.reduce_sum(weights * wrong, 0),
            tf.reduce_sum(weights, 0),
            tf.reduce_sum(combined),
            tf.cast(tf.size(labels), tf.float32),
            self.bad_label_count(labels),
        )


def error_rates(error_sum, dataset, kernel, input_mean, num_classes):
    """`(per-model errors (K,), the architecture's error)` of `kernel` on
    `dataset`, `error_sum` the `DatasetSum` of `EMBatchSums.errors`."""
    wrong, seen, combined, count, bad_labels = error_sum(
        dataset,
        tf.constant(kernel, tf.float32),
        tf.constant(input_mean, tf.float32),
    )
    check_label_count(bad_labels, num_classes)
    return wrong / np.maximum(seen, 1.0), float(combined / count)


def em_step(estep_sum, dataset, kernel, input_mean, inverse_gram, thresholds):
    """One thresholded EM update of `kernel` `(K, q, m, d)` at `thresholds`
    `(K,)` (eqs. 22 and 26), `estep_sum` the `DatasetSum` of
    `EMBatchSums.estep` and `inverse_gram` `(K, q, q)` eq. 22's inverse
    `(sum_l z_l z_l^T)^-1`; returns `(updated kernel, (log_likelihood,
    wrong, seen))`, per model and for the current kernel."""
    numerator, log_likelihood, wrong, seen = estep_sum(
        dataset,
        tf.constant(kernel, tf.float32),
        tf.constant(input_mean, tf.float32),
        tf.constant(thresholds, tf.float32),
    )
    # M-step (eq. 22): W_i = (sum_l E[h_i] x_l^T)(sum_l x_l x_l^T)^-1.
    updated = np.einsum("kpq,kqmd->kpmd", inverse_gram, numerator)
    return updated, (log_likelihood, wrong, seen)


def check_label_count(count, num_classes):
    """Raises unless `count`, the sum of `bad_label_count`, is 0."""
    if count:
        raise ValueError(
            f"`CapsuleRegressionEM` expects labels that are class ids in "
            f"[0, {num_classes}). Received {int(count)} labels "
            "outside that range or not whole numbers."
        )


def _features_and_labels(batch):
    """`(features (batch, p), labels (batch,))` of a batch `(features,
    labels)` or `{"features", "label"}`; labels `(batch, 1)` are
    squeezed."""
    if isinstance(batch, dict):
        features, labels = batch["features"], batch["label"]
    else:
        features, labels = batch[0], batch[1]
    if labels.shape.rank == 2 and labels.shape[-1] == 1:
        labels = labels[:, 0]
    if features.shape.rank != 2 or labels.shape.rank != 1:
        raise ValueError(
            "`CapsuleRegressionEM` expects a dataset of batches: features "
            "(batch, p) and class ids (batch,) (not one-hot). Received "
            f"features of shape {tuple(features.shape)} and labels of shape "
            f"{tuple(labels.shape)}; batch the dataset with "
            "`dataset.batch(n)` and pass labels as ids (`argmax` of one-hot)."
        )
    return features, labels
