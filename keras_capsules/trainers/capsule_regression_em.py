"""EM training of capsule regression (Saul, sections 2.3, 2.4 and 3.1).

```none
paper                      code
W_i (d x p)                kernel[k, :, i, :]  (q, d), q = p (+1 with offset)
x_l                        design rows z_l = [x_l - mean, 1]
sum_l x_l x_l^T            gram      (K, q, q), inverted once (eq. 22)
E[h_i | x_l, y_l]          scale * W_i x_l  (eq. 19)
r_l                        max_(y != y_l) P(y | x_l) / P(y_l | x_l)  (eq. 25)
nu                         threshold: r_l <= nu uses the prior mean (eq. 26)
gamma                      momentum (eq. 27)
```

M-step (eq. 22): `W_i <- (sum_l E[h_i|x_l, y_l] x_l^T)(sum_l x_l x_l^T)^-1`.
Protocol (3.1): five rounds with nu = 0.8, 0.6, 0.4, 0.2, 0, each ending when
validation error has not improved for 128, 64, 32, 16, 8 iterations, each
starting from the best model of the round before; gamma = 0.9.
"""

import os

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_capsules import ops as capsule_ops
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.ops.arguments import positive_int
from keras_capsules.ops.capsule_regression import posterior_scales
from keras_capsules.ops.labels import valid_class_ids
from keras_capsules.trainers import architectures, initialization
from keras_capsules.trainers.em_state import EMState
from keras_capsules.trainers.statistics import DatasetSum

PAPER_THRESHOLDS = (0.8, 0.6, 0.4, 0.2, 0.0)
PAPER_PATIENCE = (128, 64, 32, 16, 8)
# Added to the Gram matrix's diagonal, relative to its mean diagonal: keeps
# the least-squares solve defined when inputs are collinear (e.g. constant
# pixels), and is far below the data's own scale.
_RELATIVE_RIDGE = 1e-7


class CapsuleRegressionEM:
    """Trains capsule regression by EM with thresholding and momentum.

    Args:
        num_classes: int, classes `C` (>= 2).
        capsule_dim: int, capsule size `d`.
        architecture: `"multiclass"`, `"one_vs_all"` or `"all_vs_all"`.
        momentum: float, gamma of eq. 27. Defaults to the paper's 0.9.
        thresholds: sequence of nu, one per round (eq. 26).
        patience: sequence of ints, one per round: a round ends when the
            validation error has not improved for this many iterations.
        use_offset: bool, whether the models have an offset.
        center_inputs: bool, whether inputs are centred on the training mean.
        max_iterations: optional int, a cap on all iterations together.
        initializer: `"subspace"` (eq. 28) or `"random"`.
        seed: int, seed of the random initialisation.

    Example:

    ```python
    trainer = CapsuleRegressionEM(10, 2)
    history = trainer.fit(train_dataset, validation_dataset)
    error = trainer.evaluate(test_dataset)
    layer = trainer.to_layer()  # multiclass: a CapsuleRegression layer
    ```
    """

    def __init__(
        self,
        num_classes,
        capsule_dim,
        architecture="multiclass",
        momentum=0.9,
        thresholds=PAPER_THRESHOLDS,
        patience=PAPER_PATIENCE,
        use_offset=False,
        center_inputs=False,
        max_iterations=None,
        initializer="subspace",
        seed=0,
    ):
        architectures.check_architecture(architecture)
        num_classes = positive_int(
            "CapsuleRegressionEM", "num_classes", num_classes
        )
        capsule_dim = positive_int(
            "CapsuleRegressionEM", "capsule_dim", capsule_dim
        )
        if num_classes < 2:
            raise ValueError(
                f"Capsule regression needs num_classes >= 2. "
                f"Received: num_classes={num_classes}."
            )
        if len(thresholds) != len(patience) or not thresholds:
            raise ValueError(
                "`thresholds` and `patience` give one value per round and must "
                f"have equal, non-zero length. Received: {len(thresholds)} "
                f"thresholds and {len(patience)} patience values."
            )
        if any(not 0.0 <= nu <= 1.0 for nu in thresholds):
            raise ValueError(
                f"Each threshold nu must be in [0, 1]. "
                f"Received: thresholds={tuple(thresholds)}."
            )
        if not 0.0 <= float(momentum) < 1.0:
            raise ValueError(
                "`CapsuleRegressionEM` expects `momentum` gamma in [0, 1) "
                f"(eq. 27). Received: momentum={momentum!r}."
            )
        patience = tuple(
            positive_int("CapsuleRegressionEM", "patience", n) for n in patience
        )
        if max_iterations is not None:
            max_iterations = positive_int(
                "CapsuleRegressionEM", "max_iterations", max_iterations
            )
        if initializer not in ("subspace", "random"):
            raise ValueError(
                f"Unknown initializer: {initializer!r}. Expected 'subspace' "
                "or 'random'."
            )
        self.num_classes = num_classes
        self.capsule_dim = capsule_dim
        self.architecture = architecture
        self.momentum = float(momentum)
        self.thresholds = tuple(float(nu) for nu in thresholds)
        self.patience = patience
        self.use_offset = bool(use_offset)
        self.center_inputs = bool(center_inputs)
        self.max_iterations = max_iterations
        self.initializer = initializer
        self.seed = seed
        self.membership = architectures.membership(architecture, num_classes)
        self.kernel = None  # (K, q, m, d) once fitted.
        self.input_mean = None
        self._inverse_gram = None
        self._class_moment_sum = DatasetSum(self._class_moment_sums)
        self._estep_sum = DatasetSum(self._estep_sums)
        self._error_sum = DatasetSum(self._error_sums)

    @property
    def num_models(self):
        return self.membership.shape[0]

    @property
    def capsules_per_model(self):
        return self.membership.shape[1]

    # ----------------------------------------------------------------------
    # Sufficient statistics.

    def _class_moment_sums(self, batch):
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
            self._bad_label_count(y),
        )

    def _bad_label_count(self, labels):
        """How many `labels` are not whole numbers in `[0, num_classes)`:
        summed with the statistics (the sums run under XLA, which drops
        assertions) and checked after each pass."""
        whole, in_range = valid_class_ids(labels, self.num_classes)
        return tf.reduce_sum(tf.cast(~(whole & in_range), tf.float64))

    def _check_label_count(self, count):
        if count:
            raise ValueError(
                f"`CapsuleRegressionEM` expects labels that are class ids in "
                f"[0, {self.num_classes}). Received {int(count)} labels "
                "outside that range or not whole numbers."
            )

    def _design(self, x, input_mean):
        z = tf.cast(x, tf.float32) - tf.cast(input_mean, tf.float32)
        if self.use_offset:
            z = tf.concat([z, tf.ones_like(z[:, :1])], axis=1)
        return z

    def _model_outputs(self, x, labels, kernel, input_mean):
        z = self._design(x, input_mean)
        means = tf.einsum("bq,kqmd->bkmd", z, kernel)
        targets, weights = architectures.targets_and_weights(
            self.membership, labels
        )
        return z, means, targets, weights

    def _estep_sums(self, batch, kernel, input_mean, thresholds):
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

    def _error_sums(self, batch, kernel, input_mean):
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
            self._bad_label_count(labels),
        )

    def _errors(self, dataset, kernel):
        wrong, seen, combined, count, bad_labels = self._error_sum(
            dataset,
            tf.constant(kernel, tf.float32),
            tf.constant(self.input_mean, tf.float32),
        )
        self._check_label_count(bad_labels)
        return wrong / np.maximum(seen, 1.0), float(combined / count)

    # ----------------------------------------------------------------------
    # Training.

    def prepare(self, train_dataset):
        """Computes the input statistics and returns the initial kernel.

        One pass over the data: per-class counts, sums and Gram matrices give
        the input mean, the inverse of eq. 22's `sum_l x_l x_l^T` for every
        model, and the initialisation of eq. 28.

        Returns:
            The initial kernel `(K, q, m, d)`, q = p (+1 with an offset).
        """
        counts, sums, grams, bad_labels = self._class_moment_sum(train_dataset)
        self._check_label_count(bad_labels)
        p = sums.shape[-1] + int(self.use_offset)
        if self.capsule_dim > p:
            raise ValueError(
                f"`CapsuleRegressionEM` expects `capsule_dim` <= the number "
                f"of features{' + 1 (offset)' if self.use_offset else ''}, "
                f"{p}: each capsule is a projection of them. Received: "
                f"capsule_dim={self.capsule_dim}."
            )
        if np.any(counts == 0):
            raise ValueError(
                "Every class needs training examples. Classes without any: "
                f"{np.flatnonzero(counts == 0).tolist()}."
            )
        self.input_mean, design_grams = initialization.design_moments(
            counts, sums, grams, self.center_inputs, self.use_offset
        )
        model_grams = np.einsum(
            "kc,cpq->kpq", self.membership.max(axis=1), design_grams
        )
        ridge = (
            _RELATIVE_RIDGE
            * np.einsum("kpp->k", model_grams)
            / model_grams.shape[-1]
        )
        self._inverse_gram = np.linalg.inv(
            model_grams + ridge[:, None, None] * np.eye(model_grams.shape[-1])
        )
        if self.initializer == "random":
            return initialization.random_kernel(
                self.membership,
                design_grams.shape[-1],
                self.capsule_dim,
                self.seed,
            )
        return initialization.subspace_kernel(
            self.membership, counts, design_grams, self.capsule_dim
        )

    def em_update(self, train_dataset, kernel, thresholds):
        """One thresholded EM update (eqs. 22 and 26), without momentum.

        Args:
            train_dataset: the dataset `prepare` saw.
            kernel: `(K, q, m, d)` current kernels.
            thresholds: `(K,)` nu per model; 0 gives plain EM (eq. 24).

        Returns:
            `(updated_kernel, (log_likelihood, wrong, seen))`: the new
            kernels, and per model the log-likelihood (eq. 6), the number of
            misclassified and of seen examples, all for the current kernel.
        """
        if self._inverse_gram is None:
            raise ValueError(
                "Call `prepare(train_dataset)` before `em_update`."
            )
        numerator, log_likelihood, wrong, seen = self._estep_sum(
            train_dataset,
            tf.constant(kernel, tf.float32),
            tf.constant(self.input_mean, tf.float32),
            tf.constant(
                np.broadcast_to(thresholds, (self.num_models,)), tf.float32
            ),
        )
        # M-step (eq. 22): W_i = (sum_l E[h_i] x_l^T)(sum_l x_l x_l^T)^-1.
        updated = np.einsum("kpq,kqmd->kpmd", self._inverse_gram, numerator)
        return updated, (log_likelihood, wrong, seen)

    def fit(
        self,
        train_dataset,
        validation_dataset=None,
        verbose=1,
        checkpoint_path=None,
        checkpoint_every=10,
    ):
        """Runs the rounds of thresholded EM with momentum.

        Args:
            train_dataset: `tf.data.Dataset` of `(features, labels)` batches,
                features `(batch, p)`, labels `(batch,)` ints in `[0, C)`.
            validation_dataset: like `train_dataset`; its error ends rounds
                and picks the best model. Without it, training error does.
            verbose: 0 silent, 1 a Keras progress bar.
            checkpoint_path: optional `.npz` path. The training state is
                written there every `checkpoint_every` iterations and at
                the end; if the file exists, training resumes from it.
            checkpoint_every: int, iterations between checkpoints.

        Returns:
            A dict of per-iteration lists: `log_likelihood` (eq. 6, summed
            over models) and `error` on the training data (for ensembles,
            the mean error of the binary models), `validation_error` (of the
            whole architecture), `round` (the lowest round of any model) and
            `active_models`. Iteration t reports the models before their
            t-th update.
        """
        state = EMState.start(self.prepare(train_dataset))
        if checkpoint_path and os.path.exists(checkpoint_path):
            state = self._resume(checkpoint_path, state.kernel.shape)
        rounds_total = len(self.thresholds)
        progress = keras.utils.Progbar(
            self.max_iterations,
            verbose=verbose,
            unit_name="iteration",
            stateful_metrics=["log_likelihood", "error", "val_error", "round"],
        )
        while np.any(state.rounds < rounds_total):
            if self.max_iterations and state.iteration >= self.max_iterations:
                break
            self._iterate(state, train_dataset, validation_dataset)
            if checkpoint_path and state.iteration % checkpoint_every == 0:
                state.save(checkpoint_path)
            progress.update(
                state.iteration,
                [
                    ("log_likelihood", state.history["log_likelihood"][-1]),
                    ("error", state.history["error"][-1]),
                    ("val_error", state.history["validation_error"][-1]),
                    ("round", float(state.rounds.min())),
                ],
                finalize=False,
            )
        progress.update(state.iteration, finalize=True)
        if checkpoint_path:
            state.save(checkpoint_path)
        self.kernel = state.best_kernel
        self.history = state.history
        return state.history

    def _resume(self, checkpoint_path, kernel_shape):
        state = EMState.load(checkpoint_path)
        if state.kernel.shape != kernel_shape:
            raise ValueError(
                f"The checkpoint {checkpoint_path} holds kernels of shape "
                f"{state.kernel.shape}, but this trainer and data give "
                f"{kernel_shape}. Use a new checkpoint_path for a new "
                "configuration."
            )
        return state

    def _per_round(self, values, rounds):
        """Each model's value of a per-round setting, `(K,)`."""
        return np.array([values[min(r, len(values) - 1)] for r in rounds])

    def _iterate(self, state, train_dataset, validation_dataset):
        """One iteration: E-step, validation, M-step, momentum, rounds."""
        active = state.rounds < len(self.thresholds)
        nu = self._per_round(self.thresholds, state.rounds).astype(np.float32)
        updated, (log_likelihood, wrong, seen) = self.em_update(
            train_dataset, state.kernel, nu
        )
        train_error = wrong / np.maximum(seen, 1.0)
        if validation_dataset is not None:
            model_error, combined_error = self._errors(
                validation_dataset, state.kernel
            )
        else:
            model_error, combined_error = train_error, float("nan")
        history = state.history
        history["log_likelihood"].append(float(log_likelihood.sum()))
        history["error"].append(float(np.mean(train_error)))
        history["validation_error"].append(combined_error)
        history["round"].append(int(state.rounds.min()))
        history["active_models"].append(int(active.sum()))

        improved = active & (model_error < state.best_error)
        state.best_error = np.where(improved, model_error, state.best_error)
        state.best_kernel[improved] = state.kernel[improved]
        state.since_best = np.where(improved, 0, state.since_best + 1)
        patience = self._per_round(self.patience, state.rounds)
        round_over = active & (state.since_best >= patience)

        # Momentum (eq. 27) for the active models.
        updated = updated + self.momentum * (state.kernel - state.previous)
        state.previous = state.kernel
        state.kernel = np.where(
            active[:, None, None, None], updated, state.kernel
        )
        # A finished round restarts the next from its best model.
        restart = round_over[:, None, None, None]
        state.kernel = np.where(restart, state.best_kernel, state.kernel)
        state.previous = np.where(restart, state.best_kernel, state.previous)
        state.rounds = state.rounds + round_over
        state.since_best = np.where(round_over, 0, state.since_best)
        state.iteration += 1

    # ----------------------------------------------------------------------
    # Using the trained models.

    def _check_fitted(self):
        if self.kernel is None:
            raise ValueError("The trainer has no models yet: call `fit` first.")

    def predict_probabilities(self, features):
        """Returns every model's `P(y | x)`, `(batch, K, m)`."""
        self._check_fitted()
        means = tf.einsum(
            "bq,kqmd->bkmd",
            self._design(features, self.input_mean),
            tf.constant(self.kernel, tf.float32),
        )
        return capsule_ops.capsule_regression_probabilities(means)

    def predict(self, features):
        """Returns the predicted classes `(batch,)` of the architecture."""
        return ops.convert_to_numpy(
            architectures.predict_classes(
                self.architecture,
                self.membership,
                self.predict_probabilities(features),
            )
        )

    def evaluate(self, dataset):
        """Returns the architecture's classification error on a dataset."""
        self._check_fitted()
        return self._errors(dataset, self.kernel)[1]

    def binary_layers(self):
        """Returns the K trained models as `CapsuleRegression` layers."""
        self._check_fitted()
        return [self._layer(index) for index in range(self.num_models)]

    def to_layer(self):
        """Returns the trained multiclass model as a `CapsuleRegression`."""
        if self.architecture != "multiclass":
            raise ValueError(
                "`to_layer` returns the multiclass model; a "
                f"{self.architecture!r} trainer has {self.num_models} binary "
                "models: use `binary_layers()`."
            )
        return self.binary_layers()[0]

    def _layer(self, index):
        kernel = self.kernel[index]
        p = len(self.input_mean)
        layer = CapsuleRegression(
            self.capsules_per_model,
            self.capsule_dim,
            use_offset=self.use_offset,
            center_inputs=self.center_inputs,
        )
        layer.build((None, p))
        layer.kernel.assign(kernel[:p])
        if self.use_offset:
            layer.offset.assign(kernel[p])
        if self.center_inputs:
            layer.input_mean.assign(self.input_mean)
        return layer


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
