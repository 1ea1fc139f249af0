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

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_capsules import ops as capsule_ops
from keras_capsules.layers.capsule_regression import CapsuleRegression
from keras_capsules.ops.capsule_regression import posterior_scales
from keras_capsules.trainers import architectures
from keras_capsules.trainers.statistics import DatasetSum

PAPER_THRESHOLDS = (0.8, 0.6, 0.4, 0.2, 0.0)
PAPER_PATIENCE = (128, 64, 32, 16, 8)
# Added to the Gram matrix's diagonal, relative to its mean diagonal: keeps
# the least-squares solve defined when inputs are collinear (e.g. constant
# pixels), and is far below the data's own scale.
_RELATIVE_RIDGE = 1e-7
# Eigenvalues of the subspace initialisation below this fraction of the
# largest are raised to it, so 1 / sqrt(xi) stays finite (eq. 28).
_RELATIVE_EIGENVALUE_FLOOR = 1e-10


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

    >>> trainer = CapsuleRegressionEM(10, 2)
    >>> history = trainer.fit(train_dataset, validation_dataset)
    >>> error = trainer.evaluate(test_dataset)
    >>> layer = trainer.to_layer()          # multiclass: a CapsuleRegression
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
        for name, value in (
            ("num_classes", num_classes),
            ("capsule_dim", capsule_dim),
        ):
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"`{name}` must be a positive integer. "
                    f"Received: {name}={value!r}."
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
        self.patience = tuple(int(n) for n in patience)
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
        )

    def _design_moments(self, counts, sums, grams):
        """Class moments of the design rows z = [x - mean, 1]."""
        if self.center_inputs:
            mean = sums.sum(0) / counts.sum()
        else:
            mean = np.zeros(sums.shape[1])
        centred_sums = sums - counts[:, None] * mean
        centred_grams = (
            grams
            - np.einsum("cp,q->cpq", sums, mean)
            - np.einsum("p,cq->cpq", mean, sums)
            + counts[:, None, None] * np.outer(mean, mean)
        )
        if self.use_offset:
            top = np.concatenate([centred_grams, centred_sums[:, :, None]], 2)
            bottom = np.concatenate(
                [centred_sums[:, None, :], counts[:, None, None]], 2
            )
            centred_grams = np.concatenate([top, bottom], 1)
        return mean, centred_grams

    def _initial_kernel(self, counts, grams):
        """Subspace (eq. 28) or random initial kernels, `(K, q, m, d)`."""
        k, m, _ = self.membership.shape
        q, d = grams.shape[-1], self.capsule_dim
        if self.initializer == "random":
            rng = np.random.default_rng(self.seed)
            return rng.normal(0.0, 1.0 / np.sqrt(q), (k, q, m, d))
        capsule_counts = np.einsum("kic,c->ki", self.membership, counts)
        if np.any(capsule_counts < d):
            raise ValueError(
                "Subspace initialisation needs at least capsule_dim examples "
                f"for every capsule; the fewest was {capsule_counts.min():.0f} "
                f"for capsule_dim={d}. Use initializer='random' or more data."
            )
        second_moments = np.einsum("kic,cpq->kipq", self.membership, grams)
        second_moments /= capsule_counts[:, :, None, None]
        eigenvalues, eigenvectors = np.linalg.eigh(second_moments)
        xi = eigenvalues[..., ::-1][..., :d]  # (K, m, d), largest first.
        vectors = eigenvectors[..., ::-1][..., :d]  # (K, m, q, d)
        xi = np.maximum(xi, _RELATIVE_EIGENVALUE_FLOOR * xi[..., :1])
        kernel = vectors / np.sqrt(d * xi)[:, :, None, :]
        return np.transpose(kernel, (0, 2, 1, 3))

    # ----------------------------------------------------------------------
    # One pass of E-step statistics.

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
        coefficients = scales * weights[..., None]
        numerator = tf.einsum("bkm,bkmd,bq->kqmd", coefficients, means, z)
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
        )

    def _errors(self, dataset, kernel):
        wrong, seen, combined, count = self._error_sum(
            dataset,
            tf.constant(kernel, tf.float32),
            tf.constant(self.input_mean, tf.float32),
        )
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
        counts, sums, grams = self._class_moment_sum(train_dataset)
        if np.any(counts == 0):
            raise ValueError(
                "Every class needs training examples. Classes without any: "
                f"{np.flatnonzero(counts == 0).tolist()}."
            )
        self.input_mean, design_grams = self._design_moments(
            counts, sums, grams
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
        return self._initial_kernel(counts, design_grams)

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
        if getattr(self, "_inverse_gram", None) is None:
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

    def fit(self, train_dataset, validation_dataset=None, verbose=1):
        """Runs the rounds of thresholded EM with momentum.

        Args:
            train_dataset: `tf.data.Dataset` of `(features, labels)` batches,
                features `(batch, p)`, labels `(batch,)` ints in `[0, C)`.
            validation_dataset: like `train_dataset`; its error ends rounds
                and picks the best model. Without it, training error does.
            verbose: 0 silent, 1 a Keras progress bar.

        Returns:
            A dict of per-iteration lists: `log_likelihood` and `error` on the
            training data, `validation_error`, `round` and `active_models`.
            Iteration t reports the models before their t-th update.
        """
        kernel = self.prepare(train_dataset)
        k = self.num_models
        previous = kernel.copy()
        best_kernel = kernel.copy()
        best_error = np.full(k, np.inf)
        since_best = np.zeros(k, int)
        rounds = np.zeros(k, int)
        history = {
            "log_likelihood": [],
            "error": [],
            "validation_error": [],
            "round": [],
            "active_models": [],
        }
        progress = keras.utils.Progbar(
            self.max_iterations,
            verbose=verbose,
            unit_name="iteration",
            stateful_metrics=["log_likelihood", "error", "val_error", "round"],
        )
        iteration = 0
        while np.any(rounds < len(self.thresholds)):
            if self.max_iterations and iteration >= self.max_iterations:
                break
            active = rounds < len(self.thresholds)
            nu = np.array(
                [
                    self.thresholds[min(r, len(self.thresholds) - 1)]
                    for r in rounds
                ],
                np.float32,
            )
            updated, (log_likelihood, wrong, seen) = self.em_update(
                train_dataset, kernel, nu
            )
            train_error = wrong / np.maximum(seen, 1.0)
            if validation_dataset is not None:
                model_error, combined_error = self._errors(
                    validation_dataset, kernel
                )
            else:
                model_error = train_error
                combined_error = float("nan")
            history["log_likelihood"].append(float(log_likelihood.sum()))
            history["error"].append(
                float((train_error * seen).sum() / seen.sum())
                if k == 1
                else float(np.mean(train_error))
            )
            history["validation_error"].append(combined_error)
            history["round"].append(int(rounds.min()))
            history["active_models"].append(int(active.sum()))

            improved = active & (model_error < best_error)
            best_error = np.where(improved, model_error, best_error)
            best_kernel[improved] = kernel[improved]
            since_best = np.where(improved, 0, since_best + 1)
            patience = np.array(
                [self.patience[min(r, len(self.patience) - 1)] for r in rounds]
            )
            round_over = active & (since_best >= patience)

            # Momentum (eq. 27) for the active models.
            updated = updated + self.momentum * (kernel - previous)
            previous = kernel
            kernel = np.where(active[:, None, None, None], updated, kernel)
            # A finished round restarts the next from its best model.
            restart = round_over[:, None, None, None]
            kernel = np.where(restart, best_kernel, kernel)
            previous = np.where(restart, best_kernel, previous)
            rounds = rounds + round_over
            since_best = np.where(round_over, 0, since_best)
            iteration += 1
            progress.update(
                iteration,
                [
                    ("log_likelihood", history["log_likelihood"][-1]),
                    ("error", history["error"][-1]),
                    ("val_error", combined_error),
                    ("round", float(rounds.min())),
                ],
                finalize=False,
            )
        progress.update(iteration, finalize=True)
        self.kernel = best_kernel
        self.history = history
        return history

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
    if isinstance(batch, dict):
        return batch["features"], batch["label"]
    return batch[0], batch[1]
